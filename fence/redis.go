package fence

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/dlock-go/dlock/observe"
)

// DefaultField is the field of a hash written by Redis.HSet that holds the
// hash's fence, unless WithField names another.
const DefaultField = "dlock:fence"

// FenceKeySuffix ends the name of the key that holds the fence of a value
// written by Redis.Set: the fence of "balance" is kept at
// "{balance}:fence", and that of "user:{42}", which has a hash tag, at
// "user:{42}:fence", in the same Redis Cluster slot as the value.
const FenceKeySuffix = ":fence"

var (
	//go:embed set.lua
	setSource string
	//go:embed hset.lua
	hsetSource string

	setScript  = redis.NewScript(setSource)
	hsetScript = redis.NewScript(hsetSource)
)

// The status codes of set.lua and hset.lua.
const (
	statusStale   = 0 // a higher fence is recorded: nothing written
	statusWritten = 1 // written, the fence recorded
)

// Redis writes values to a Redis deployment (usually another one than the
// lock's) with a fence beside each, and refuses a write whose fence is
// lower than the one recorded: each write is one Lua script, which checks
// and writes atomically. A Redis is safe for concurrent use.
type Redis struct {
	rdb   redis.UniversalClient
	field string
	cfg   config // WithObserver's, for each write
}

// NewRedis returns a Redis that writes through rdb: a client of one
// server, of a Sentinel deployment or of a Cluster. Its options are
// WithField and WithObserver. rdb must not be nil, and the field of
// WithField not empty.
func NewRedis(rdb redis.UniversalClient, opts ...Option) (*Redis, error) {
	if rdb == nil {
		return nil, errors.New("fence: nil Redis client")
	}
	cfg := applyOptions(opts)
	if cfg.err != nil {
		return nil, cfg.err
	}
	if err := cfg.refuse("NewRedis", "WithTable", "WithDialect"); err != nil {
		return nil, err
	}
	if cfg.field == "" {
		return nil, errors.New("fence: empty fence field")
	}
	return &Redis{rdb: rdb, field: cfg.field, cfg: cfg}, nil
}

// Set sets key to value, with a time to live of ttl (none if 0), and
// records fence f beside it (see FenceKeySuffix), unless a higher fence is
// recorded for key: then it writes nothing and returns a *StaleError
// (matching ErrStale). An equal fence passes, so that one holder may write
// again; a fence of 0 (see Guard) is refused as stale. The key of the fence has no time to live: it outlives the value,
// so that a stale writer cannot write an expired value back; delete both
// when the value is gone for good.
//
// A call that go-redis sends again (its default MaxRetries, when a reply
// is late) is harmless: the copy carries the same fence and value, passes
// as an equal fence and writes the same value again (restarting ttl). If a
// higher fence wrote between the two copies, the later copy is refused
// and Set returns a StaleError, although its first copy may have been
// written before the higher fence's: either way, the higher fence's value
// is the one that stands.
//
// key must not be empty, nor hold a '}' outside a hash tag; f must be
// positive and ttl 0 or at least a millisecond.
func (r *Redis) Set(ctx context.Context, key string, f int64, value any, ttl time.Duration) (err error) {
	if r.cfg.observer != nil {
		defer func(start time.Time) { r.cfg.tell(observe.OpRedisWrite, key, start, err, false) }(time.Now())
	}
	fenceKey, err := fenceKeyOf(key)
	if err != nil {
		return err
	}
	if err := checkFence(key, f); err != nil {
		return err
	}
	if ttl < 0 || (ttl > 0 && ttl < time.Millisecond) {
		return fmt.Errorf("fence: ttl %v for %q: want 0 (none) or at least 1ms", ttl, key)
	}
	reply, err := setScript.Run(ctx, r.rdb, []string{key, fenceKey}, f, value, ttl.Milliseconds()).Slice()
	if err != nil {
		return fmt.Errorf("fence: set %q with fence %d: %w", key, f, err)
	}
	return decode(reply, key, f)
}

// HSet sets the fields of the hash at key to values, and records fence f
// in the hash's fence field (DefaultField unless WithField names another),
// unless a higher fence is recorded there: then it writes nothing and
// returns a *StaleError (matching ErrStale). An equal fence passes. A
// resent copy of the call is harmless, as for Set. The fence lives as long
// as the hash does.
//
// key must not be empty, f must be positive, and values must hold at
// least one field, not the fence field.
func (r *Redis) HSet(ctx context.Context, key string, f int64, values map[string]any) (err error) {
	if r.cfg.observer != nil {
		defer func(start time.Time) { r.cfg.tell(observe.OpRedisWrite, key, start, err, false) }(time.Now())
	}
	if key == "" {
		return errors.New("fence: empty key")
	}
	if err := checkFence(key, f); err != nil {
		return err
	}
	if len(values) == 0 {
		return fmt.Errorf("fence: no field to set in %q", key)
	}
	args := make([]any, 0, 2+2*len(values))
	args = append(args, r.field, f)
	for field, v := range values {
		if field == r.field {
			return fmt.Errorf("fence: field %q of %q is the fence field", field, key)
		}
		args = append(args, field, v)
	}
	reply, err := hsetScript.Run(ctx, r.rdb, []string{key}, args...).Slice()
	if err != nil {
		return fmt.Errorf("fence: hset %q with fence %d: %w", key, f, err)
	}
	return decode(reply, key, f)
}

// decode maps the reply of set.lua or hset.lua to Set's or HSet's error.
func decode(reply []any, key string, f int64) error {
	if len(reply) != 2 {
		return fmt.Errorf("fence: write of %q: unexpected reply %v", key, reply)
	}
	status, _ := reply[0].(int64)
	text, _ := reply[1].(string)
	recorded, err := strconv.ParseInt(text, 10, 64)
	if err != nil {
		return fmt.Errorf("fence: write of %q: unexpected fence in the reply %v", key, reply)
	}
	switch status {
	case statusWritten:
		return nil
	case statusStale:
		return &StaleError{Resource: key, Fence: f, Recorded: recorded}
	}
	return fmt.Errorf("fence: write of %q: unexpected status in the reply %v", key, reply)
}

// fenceKeyOf returns the key that holds the fence of the value at key, in
// the same Redis Cluster slot.
func fenceKeyOf(key string) (string, error) {
	if key == "" {
		return "", errors.New("fence: empty key")
	}
	if start := strings.IndexByte(key, '{'); start >= 0 && strings.IndexByte(key[start+1:], '}') > 0 {
		return key + FenceKeySuffix, nil // the tag puts both in one slot
	}
	if strings.IndexByte(key, '}') >= 0 {
		return "", fmt.Errorf("fence: key %q holds a '}' outside a hash tag, so no key of its fence shares its Cluster slot: give it a hash tag", key)
	}
	return "{" + key + "}" + FenceKeySuffix, nil
}

// checkFence refuses a fence that is not positive: 0 as stale (see Guard).
func checkFence(key string, f int64) error {
	if f == 0 {
		return &StaleError{Resource: key}
	}
	if f < 0 {
		return fmt.Errorf("fence: fence %d for %q: want a positive fence, as a lock's Fence is", f, key)
	}
	return nil
}
