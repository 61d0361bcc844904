package cachefill

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"
)

// The callers that wait for a fill read the entry's stream of fills, which
// each loader adds a message to when it is done (store.lua, gave_up.lua): a
// blocking XREAD after the ID of the last message that read.lua saw, so
// that a message added between the read and the XREAD is not missed, and
// the one command that waits also brings the value. A caller that waits
// sends the read and the XREAD, however long the load takes (one more
// XREAD per Redis timeout, to stay within it).

// Codes of the field r of a fill message.
const (
	fillGaveUp   = "0" // the loader stored nothing: elect the next one
	fillValue    = "1" // stored a value, in the field v
	fillNotFound = "2" // stored not found
)

// maxBlockedWaits is how many blocking reads of fill messages a Cache runs
// at once, each on a connection of the client's pool, which it holds for
// the Redis timeout at most: so that waits for many keys at once never take
// the pool from the Cache's other calls. Further waits queue for their
// turn; a fill message lives long enough to be read then.
const maxBlockedWaits = 4

// fillMessageTTL is how long a fill message lives: as long as a loader's
// lock, so that a caller that read the lock held before the loader stored
// finds it, however late its XREAD comes.
func fillMessageTTL(o options) time.Duration { return o.lockTTL }

// fillMessage is what a loader said when it was done.
type fillMessage struct {
	code  string // fillGaveUp, fillValue or fillNotFound
	value []byte
}

// waitFill waits for the fill message that comes after the read e, a miss
// whose fill another caller claimed. It reports done with Get's result
// when the loader stored an entry (or Redis failed), and not done when the
// next loader is to be elected: the loader gave up, or as long as a lock
// lives passed without a message, so the read is to be looked at again.
func (c *Cache) waitFill(ctx context.Context, r request, e entry) (done bool, value []byte, err error) {
	deadline := time.Now().Add(c.opts.lockTTL)
	for {
		left := time.Until(deadline)
		if left <= 0 {
			return false, nil, nil
		}
		m, err := c.readFill(ctx, r.keys.filled, e.lastFill, min(left, c.opts.redisTimeout))
		switch {
		case err != nil:
			v, err := c.redisFailed(ctx, r, "wait", err)
			return true, v, err
		case m == nil:
			continue
		case m.code == fillValue:
			return true, m.value, nil
		case m.code == fillNotFound:
			return true, nil, notFound(r.key)
		}
		return false, nil, nil
	}
}

// readFill reads the first fill message after the ID after, blocked for
// block at most; nil when none came.
func (c *Cache) readFill(ctx context.Context, stream, after string, block time.Duration) (*fillMessage, error) {
	block = max(block, time.Millisecond) // 0 would block for ever
	select {
	case c.blocked <- struct{}{}: // a connection of the pool, for block at most
		defer func() { <-c.blocked }()
	case <-ctx.Done():
		return nil, context.Cause(ctx)
	}
	return boundedFor(ctx, c, block+c.opts.redisTimeout, func(ctx context.Context) (*fillMessage, error) {
		s, err := c.rdb.XRead(ctx, &redis.XReadArgs{Streams: []string{stream, after}, Count: 1, Block: block}).Result()
		if errors.Is(err, redis.Nil) {
			return nil, nil
		}
		if err != nil {
			return nil, err
		}
		if len(s) != 1 || len(s[0].Messages) != 1 {
			return nil, fmt.Errorf("unexpected reply %v", s)
		}
		values := s[0].Messages[0].Values
		code, _ := values["r"].(string)
		value, _ := values["v"].(string)
		return &fillMessage{code: code, value: []byte(value)}, nil
	})
}

// gaveUp tells the callers that wait for the fill of k that its loader,
// whose lock token was token and which released its lock, stored nothing,
// and clears the fill's claim, so that they elect the next loader at once.
// It runs in the goroutine of the load, which Close waits for, also once
// the Cache is closed: a Cache closed mid-load gives up too.
func (c *Cache) gaveUp(ctx context.Context, k keys, token string) error {
	return gaveUpScript.Run(ctx, c.rdb, []string{k.claim, k.filled, k.gaveUp}, token, fillMessageTTL(c.opts).Milliseconds()).Err()
}
