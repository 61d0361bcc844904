package cachefill

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strconv"
)

// Invalidate marks the entry of key as to be loaded again, for a writer
// that changed the source. It does not delete it: the next Gets keep
// getting the entry as it is while one of them loads it again in the
// background (one load across processes, as for a miss), so an update of a
// hot key does not cause a stampede either. A load that was already
// running when Invalidate was called may have read the source before the
// change: its value is stored marked, and loaded again too.
//
// Invalidate of a key without an entry leaves a mark that lives as long as
// a load may run, for the same reason. It returns ErrWrongType if the
// entry's key holds another type, and Redis's error if it fails; it does
// not fall back (WithFallback): a writer that could not invalidate should
// know. An error of Redis leaves the outcome unknown: the mark may still
// be made when Redis answers (go-redis resends a command whose reply did
// not come in time, and every copy runs); call Invalidate again. Whatever
// go-redis resends, one call marks the entry once.
func (c *Cache) Invalidate(ctx context.Context, key string) error {
	if err := c.check(key); err != nil {
		return err
	}
	k := keysOf(c.opts.prefix, key)
	// A load stores within the load timeout and two calls to Redis after
	// reading the entry; the lock's ttl is a margin on top.
	markTTL := c.opts.loadTimeout + 2*c.opts.redisTimeout + c.opts.lockTTL
	// The call's id, which a copy of it that go-redis resends finds in
	// the entry, so that it does not count a second mark.
	id := strconv.FormatUint(rand.Uint64(), 36)
	code, err := bounded(ctx, c, func(ctx context.Context) (int64, error) {
		return invalidateScript.Run(ctx, c.rdb, []string{k.entry}, markTTL.Milliseconds(), id).Int64()
	})
	switch {
	case err != nil:
		return fmt.Errorf("cachefill: invalidate %q: %w", key, err)
	case code == invalidateWrongType:
		return fmt.Errorf("cachefill: invalidate %q: %w", key, ErrWrongType)
	}
	return nil
}
