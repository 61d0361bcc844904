package cachefill

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"time"

	"github.com/dlock-go/dlock"
)

// request is one Get's key, with what it needs to load the key.
type request struct {
	key  string
	keys keys
	ttl  time.Duration
	load func(context.Context) ([]byte, error)
}

// fetch is the work of one flight: read the entry, and on a miss fill it.
// Only one fetch of a key runs at a time in a process.
func (c *Cache) fetch(ctx context.Context, r request) ([]byte, error) {
	e, err := c.read(ctx, r.keys)
	if err != nil {
		return c.redisFailed(ctx, r, "read", err)
	}
	if e.found() {
		c.hits.Add(1)
		c.considerRefresh(ctx, r, e)
		return e.result(r.key)
	}
	c.misses.Add(1)
	return c.fill(ctx, r, e.held)
}

// fill gets the entry of a key that missed, across processes: the caller
// that obtains the key's lock loads it and stores it, the others wait for
// the lock's release and read what it stored. When it stored nothing (its
// load failed, it died, or it lost its lock), they elect the next loader
// among themselves the same way. held says that the read that missed saw
// the lock held: then it waits at once.
func (c *Cache) fill(ctx context.Context, r request, held bool) ([]byte, error) {
	for {
		if !held {
			lock, err := bounded(ctx, c, func(ctx context.Context) (*dlock.Lock, error) {
				return c.locker.TryObtain(ctx, r.keys.lock, c.opts.lockTTL, dlock.WithAutoRenew(true))
			})
			switch {
			case err == nil:
				v, again, err := c.loadAsHolder(ctx, r, lock)
				if !again {
					return v, err
				}
				continue
			case !errors.Is(err, dlock.ErrNotObtained):
				return c.redisFailed(ctx, r, "lock", err)
			}
		}
		c.waits.Add(1)
		if err := c.locker.WaitRelease(ctx, r.keys.lock); err != nil {
			return c.redisFailed(ctx, r, "wait", err)
		}
		e, err := c.read(ctx, r.keys)
		if err != nil {
			return c.redisFailed(ctx, r, "read", err)
		}
		if e.found() {
			return e.result(r.key)
		}
		held = e.held // the next loader, elected already, or not yet
	}
}

// loadAsHolder loads and stores an entry while it holds the key's lock,
// and releases the lock. It reports again when the lock was lost before the
// load gave anything: then another caller loads, and the fill waits for it.
func (c *Cache) loadAsHolder(ctx context.Context, r request, lock *dlock.Lock) (value []byte, again bool, err error) {
	defer c.release(ctx, r, lock)
	// Another process may have stored the entry between our read and the
	// lock: read it again, which also tells its gen.
	e, err := c.read(ctx, r.keys)
	if err != nil {
		v, err := c.redisFailed(ctx, r, "read", err)
		return v, false, err
	}
	if e.found() {
		v, err := e.result(r.key)
		return v, false, err
	}
	v, err := c.loadAndStore(ctx, r, lock, e.gen)
	if err != nil && lock.Err() != nil && ctx.Err() == nil {
		c.log.Warn("cachefill: the loader's lock was lost while it loaded; waiting for the next loader",
			slog.String("key", r.key), slog.Any("err", lock.Err()))
		return nil, true, nil
	}
	return v, false, err
}

// loadAndStore calls the load function and stores what it gives, while
// lock is held: a value or ErrNotFound (for the not-found ttl), but not
// another error. It returns the value even if storing it failed.
func (c *Cache) loadAndStore(ctx context.Context, r request, lock *dlock.Lock, gen string) ([]byte, error) {
	l := c.runLoad(ctx, r.key, lock.Done(), r.load)
	c.loads.Add(1)
	s := stored{value: l.value, ttl: c.jittered(r.ttl), took: l.took, gen: gen}
	switch {
	case errors.Is(l.err, ErrNotFound):
		if c.opts.notFoundTTL == 0 {
			return nil, notFound(r.key)
		}
		s.value, s.notFound, s.ttl = nil, true, c.jittered(c.opts.notFoundTTL)
		l.err = notFound(r.key)
	case l.err != nil:
		return nil, l.err
	}
	code, err := c.store(ctx, r.keys, lock.Token(), s)
	switch {
	case err != nil:
		c.log.Warn("cachefill: could not store a loaded entry", slog.String("key", r.key), slog.Any("err", err))
	case code == storeNotHeld:
		c.log.Warn("cachefill: the loader's lock was lost before it stored the entry; not stored",
			slog.String("key", r.key))
	}
	return l.value, l.err
}

// release releases a loader's lock, also when its Get's context ended, so
// the waiters do not have to wait for its ttl.
func (c *Cache) release(ctx context.Context, r request, lock *dlock.Lock) {
	if lock.Err() != nil {
		return // lost: nothing to release
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), c.opts.redisTimeout)
	defer cancel()
	if err := lock.Release(ctx); err != nil && !errors.Is(err, dlock.ErrNotHeld) {
		c.log.Warn("cachefill: could not release the loader's lock; it expires",
			slog.String("key", r.key), slog.Any("err", err))
	}
}

// jittered takes a random share of up to the jitter off ttl.
func (c *Cache) jittered(ttl time.Duration) time.Duration {
	return jitter(ttl, c.opts.jitter, rand.Float64())
}

// jitter takes u*share of ttl off it, for u in [0, 1), keeping at least a
// millisecond.
func jitter(ttl time.Duration, share, u float64) time.Duration {
	return max(ttl-time.Duration(float64(ttl)*share*u), time.Millisecond)
}

// redisFailed is what a Get whose call to Redis failed returns: its
// context's error if that ended, ErrWrongType and ErrClosed as they are,
// and otherwise the load's result, called directly (WithFallback), or the
// error.
func (c *Cache) redisFailed(ctx context.Context, r request, step string, err error) ([]byte, error) {
	if ctx.Err() != nil {
		return nil, context.Cause(ctx)
	}
	err = fmt.Errorf("cachefill: %s %q: %w", step, r.key, err)
	if !c.opts.fallback || errors.Is(err, ErrWrongType) || errors.Is(err, ErrClosed) || errors.Is(err, dlock.ErrClosed) {
		return nil, err
	}
	c.log.Warn("cachefill: Redis failed; loading directly", slog.String("key", r.key),
		slog.String("step", step), slog.Any("err", err))
	c.fallbacks.Add(1)
	l := c.runLoad(ctx, r.key, nil, r.load)
	c.loads.Add(1)
	if errors.Is(l.err, ErrNotFound) {
		return nil, notFound(r.key)
	}
	return l.value, l.err
}
