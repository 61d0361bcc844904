package idempotency

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"sync/atomic"

	"github.com/redis/go-redis/v9"

	"github.com/dlock-go/dlock"
	"github.com/dlock-go/dlock/internal/redisclient"
)

// Store keeps the outcomes of calls by idempotency key in Redis, and makes
// sure that one call at a time runs for a key. It is safe for concurrent
// use; one Store per process and Redis is enough.
type Store struct {
	rdb    redis.UniversalClient
	locker *dlock.Client // its own, on rdb: closed by Close
	cfg    config

	closed atomic.Bool
}

// New returns a Store that keeps its records and locks on rdb: a
// *redis.Client (also from redis.NewFailoverClient) or a
// *redis.ClusterClient. It does not talk to Redis.
//
// A nil rdb or an invalid option is not a panic: New returns an error
// wrapping ErrInvalidOption, and no Store.
func New(rdb redis.UniversalClient, opts ...Option) (*Store, error) {
	cfg := newConfig(opts)
	if cfg.err == nil && redisclient.IsNil(rdb) {
		cfg.invalid("New with a nil redis client")
	}
	if cfg.err != nil {
		return nil, cfg.err
	}
	return &Store{rdb: rdb, cfg: cfg, locker: dlock.New(rdb, dlock.WithLogger(cfg.logger))}, nil
}

// Close makes later calls return ErrClosed and waits for the Store's
// background work. Call it once the calls of Do and the requests through the
// Middleware have returned: a call still running when the Store closes
// cannot store its result, and its key stays blocked until the lock's time
// to live runs out (see WithLockTTL). Close does not close the Redis client.
// It always returns nil.
func (s *Store) Close() error {
	if s == nil {
		return nil
	}
	s.closed.Store(true)
	if s.locker != nil {
		s.locker.Close() // waits for the lock's background work
	}
	return nil
}

// errNotNew is the error of a Store that New did not make.
var errNotNew = fmt.Errorf("%w: a Store not made by New", ErrInvalidOption)

// usable returns the error every call returns on a Store that cannot work.
func (s *Store) usable() error {
	if s == nil || s.locker == nil {
		return errNotNew
	}
	if s.closed.Load() {
		return ErrClosed
	}
	return nil
}

// keys are the Redis keys of one idempotency key: the dlock lock that the
// call running fn holds, and the record of its outcome. Both carry the same
// hash tag, a digest of the idempotency key, so they live in one Cluster
// slot, have a fixed length whatever the key, and no key can inject anything
// into their names.
type keys struct {
	lock, record string
}

func (s *Store) keysOf(key string) keys {
	sum := sha256.Sum256([]byte(key))
	base := s.cfg.prefix + "{" + hex.EncodeToString(sum[:16]) + "}"
	return keys{lock: base + ":lock", record: base + ":result"}
}
