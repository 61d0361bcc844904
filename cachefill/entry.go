package cachefill

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/dlock-go/dlock/internal/aclhint"
	"github.com/dlock-go/dlock/internal/owner"
)

// entry is what read found for a cache key.
type entry struct {
	code   int64 // readMiss, readValue or readNotFound
	value  []byte
	delta  time.Duration // how long the load that stored it took
	filler string        // the lock token of that loader
	gen    string        // how many times the entry was invalidated, as Redis keeps it
	stale  bool          // invalidated after its loader read gen: to be loaded again
	ttl    time.Duration // left before it expires; negative without expiry

	// Of a miss: whether the caller holds the fill's claim, so it is to
	// load, and the ID of the last message on the stream of fills, after
	// which the message of the fill it waits for comes.
	claimed  bool
	lastFill string
}

// found reports whether the entry answers a Get: a value, or not found.
func (e entry) found() bool { return e.code != readMiss }

// result is what Get returns for a found entry.
func (e entry) result(key string) ([]byte, error) {
	if e.code == readNotFound {
		return nil, notFound(key)
	}
	return e.value, nil
}

func notFound(key string) error {
	return fmt.Errorf("%w: %q", ErrNotFound, key)
}

// read reads the entry of k in one round trip; on a miss, it claims its
// fill for token unless another caller has, or a loader holds the lock.
func (c *Cache) read(ctx context.Context, k keys, token string) (entry, error) {
	v, err := bounded(ctx, c, func(ctx context.Context) ([]any, error) {
		return readScript.Run(ctx, c.rdb, []string{k.entry, k.filled, k.claim, k.lock}, token, c.opts.lockTTL.Milliseconds()).Slice()
	})
	if err != nil {
		return entry{}, err
	}
	return parseEntry(v)
}

// parseEntry decodes the reply of read.lua.
func parseEntry(v []any) (entry, error) {
	if len(v) == 0 {
		return entry{}, badReply(v)
	}
	code, _ := v[0].(int64)
	switch code {
	case readMiss:
		if len(v) != 4 {
			return entry{}, badReply(v)
		}
		gen, _ := v[1].(string)
		claimed, _ := v[2].(int64)
		last, _ := v[3].(string)
		return entry{code: readMiss, gen: gen, claimed: claimed == 1, lastFill: last}, nil
	case readWrongType:
		return entry{}, ErrWrongType
	case readValue, readNotFound:
	default:
		return entry{}, badReply(v)
	}
	if len(v) != 7 {
		return entry{}, badReply(v)
	}
	value, _ := v[1].(string)
	delta, _ := v[2].(string)
	filler, _ := v[3].(string)
	gen, _ := v[4].(string)
	stale, _ := v[5].(string)
	pttl, _ := v[6].(int64)
	ms, err := strconv.ParseInt(delta, 10, 64)
	if err != nil {
		return entry{}, badReply(v)
	}
	return entry{
		code:   code,
		value:  []byte(value),
		delta:  time.Duration(ms) * time.Millisecond,
		filler: filler,
		gen:    gen,
		stale:  stale == "1",
		ttl:    time.Duration(pttl) * time.Millisecond,
	}, nil
}

// badReply is the error of a read.lua reply parseEntry cannot decode. It is
// made only then: formatting a reply copies the value it holds.
func badReply(v []any) error {
	return fmt.Errorf("unexpected reply %v", v)
}

// stored is what a loader stores: a value, or that the source has none.
type stored struct {
	value    []byte
	notFound bool
	ttl      time.Duration // jittered
	took     time.Duration // how long the load took
	gen      string        // the entry's gen as read before the load
}

// store stores s as the entry of k if token still holds k's lock, and
// hands it to the callers that wait for it, in one round trip, and returns
// the code of store.lua.
func (c *Cache) store(ctx context.Context, k keys, token string, s stored) (int64, error) {
	nf := "0"
	if s.notFound {
		nf = "1"
	}
	took := max(s.took.Milliseconds(), 1) // 0 would never refresh early
	code, err := bounded(ctx, c, func(ctx context.Context) (int64, error) {
		return storeScript.Run(ctx, c.rdb, []string{k.entry, k.lock, k.filled, k.claim},
			token, s.value, nf, s.ttl.Milliseconds(), took, s.gen, fillMessageTTL(c.opts).Milliseconds()).Int64()
	})
	if err == nil && code == storeWrongType {
		err = ErrWrongType
	}
	return code, err
}

// bounded runs fn, a call to Redis, with a deadline of the Redis timeout,
// and returns by then, or when ctx ends, even if Redis does not answer
// (go-redis itself may wait for its ReadTimeout): fn then goes on in a
// goroutine that Close waits for.
func bounded[T any](ctx context.Context, c *Cache, fn func(context.Context) (T, error)) (T, error) {
	return boundedFor(ctx, c, c.opts.redisTimeout, fn)
}

// boundedFor is bounded with a deadline of d, for a call that blocks.
func boundedFor[T any](ctx context.Context, c *Cache, d time.Duration, fn func(context.Context) (T, error)) (T, error) {
	var zero T
	ctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	type result struct {
		v   T
		err error
	}
	r, answered, started := owner.Await(c.own, ctx.Done(), func() result {
		v, err := fn(ctx)
		return result{v, err}
	})
	switch {
	case !started:
		return zero, ErrClosed
	case !answered:
		return zero, fmt.Errorf("no answer from Redis: %w", context.Cause(ctx))
	case r.err != nil:
		return r.v, aclhint.Wrap(r.err, aclhint.Rules{Keys: "~" + c.opts.prefix + "*, the keys of the cache"})
	}
	return r.v, nil
}
