package cachefill

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"strconv"
	"time"

	"github.com/dlock-go/dlock"
	"github.com/dlock-go/dlock/internal/door"
	"github.com/dlock-go/dlock/observe"
)

// request is one Get's key, with what it needs to load the key.
type request struct {
	key   string
	keys  keys
	ttl   time.Duration
	load  func(context.Context) ([]byte, error)
	token string // of the fetch, for the fill's claim
}

// fetch is the work of one flight: read the entry, and on a miss fill it.
// Only one fetch of a key runs at a time in a process.
func (c *Cache) fetch(ctx context.Context, r request) ([]byte, error) {
	r.token = strconv.FormatUint(rand.Uint64(), 36)
	e, err := c.read(ctx, r.keys, r.token)
	if err != nil {
		return c.redisFailed(ctx, r, "read", err)
	}
	if c.falling.Load() && c.falling.CompareAndSwap(true, false) {
		c.log.Info("cachefill: Redis answers again; loading through the cache", slog.String("key", r.key))
	}
	if e.found() {
		c.hits.Add(1)
		if c.obs != nil {
			outcome := observe.OutcomeHit
			if e.stale {
				outcome = observe.OutcomeStale
			}
			c.observe(observe.OpLookup, outcome, r.key, 0)
		}
		c.considerRefresh(ctx, r, e)
		return e.result(r.key)
	}
	c.misses.Add(1)
	if c.obs != nil {
		c.observe(observe.OpLookup, observe.OutcomeMiss, r.key, 0)
	}
	return c.fill(ctx, r, e)
}

// fill gets the entry of a key that missed, across processes: the caller
// whose read claimed the fill (the first to miss) takes the key's lock,
// loads the entry and stores it; the others wait for its fill message,
// which brings the entry (see notify.go). When it stored nothing (its load
// failed, it died, or it lost its lock), they elect the next loader among
// themselves the same way. e is the read that missed.
func (c *Cache) fill(ctx context.Context, r request, e entry) ([]byte, error) {
	for {
		if e.claimed {
			if done, v, err := c.tryLoad(ctx, r, e); done {
				return v, err
			}
			// Another caller holds the lock: wait for its fill too.
		}
		c.waits.Add(1)
		if c.obs != nil {
			c.observe(observe.OpWait, "", r.key, 0)
		}
		if done, v, err := c.waitFill(ctx, r, e); done {
			return v, err
		}
		var err error
		if e, err = c.read(ctx, r.keys, r.token); err != nil {
			return c.redisFailed(ctx, r, "read", err)
		}
		if e.found() {
			return e.result(r.key)
		}
	}
}

// tryLoad loads the entry if it obtains the key's lock. The load starts
// with the request for the lock, not after its answer: the read e claimed
// the fill where the lock was free, and a fill asks for the lock only with
// its claim, so the lock is refused only if something changed in the round
// trip since (a background refresh, which needs no claim, took the lock;
// the entry was stored or invalidated; a claim was lost): then the load is
// dropped.
//
// It reports not done when another caller holds the lock, or when it lost
// the lock while it loaded: the fill then waits for the next fill message.
func (c *Cache) tryLoad(ctx context.Context, r request, e entry) (done bool, value []byte, err error) {
	early := c.startLoad(ctx, r.key, r.load)
	// Where the entry's key did not exist (gen "0"), the lock is taken only
	// while it still does not (the guard), in the same step: so no entry
	// was stored since the read that missed, and none was invalidated. Where
	// it held a mark of Invalidate, the load stores with the mark's gen as
	// the read saw it, before the load started.
	var opts []dlock.ObtainOption
	if e.gen == "0" {
		opts = append(opts, door.WithGuard[dlock.ObtainOption](r.keys.entry))
	}
	lock, err := c.obtain(ctx, r, opts...)
	switch {
	case err == nil:
		return c.loadAsHolder(ctx, r, lock, e.gen, early)
	case !errors.Is(err, door.ErrGuarded) && !errors.Is(err, dlock.ErrNotObtained):
		// No lock, since Redis failed or the Get's callers all left: let
		// the next miss claim the fill at once rather than after the
		// claim's ttl. A fallback to loading directly takes the load
		// already running.
		c.unclaim(ctx, r)
		v, err := c.redisFailedLoading(ctx, r, "lock", err, early)
		return true, v, err
	}
	early.drop(errNoLock)
	if errors.Is(err, door.ErrGuarded) {
		// An entry stored since, or a mark of Invalidate without one.
		e, err := c.read(ctx, r.keys, r.token)
		switch {
		case err != nil:
			v, err := c.redisFailed(ctx, r, "read", err)
			return true, v, err
		case e.found():
			c.unclaim(ctx, r)
			v, err := e.result(r.key)
			return true, v, err
		}
		if lock, err = c.obtain(ctx, r); err == nil {
			return c.loadMarked(ctx, r, lock)
		}
	}
	if errors.Is(err, dlock.ErrNotObtained) {
		return false, nil, nil
	}
	// The lock without the guard failed too.
	c.unclaim(ctx, r)
	v, err := c.redisFailed(ctx, r, "lock", err)
	return true, v, err
}

// obtain takes the key's lock for a load, at once or not at all.
func (c *Cache) obtain(ctx context.Context, r request, opts ...dlock.ObtainOption) (*dlock.Lock, error) {
	opts = append(opts, dlock.WithAutoRenew(true))
	return bounded(ctx, c, func(ctx context.Context) (*dlock.Lock, error) {
		return c.locker.TryObtain(ctx, r.keys.lock, c.opts.lockTTL, opts...)
	})
}

// unclaim clears the fill claim of r if it is r's, for a fetch that
// claimed the fill and ends without loading: in a goroutine of its own, so
// that the Get does not wait for it, also when its context ended; in the
// fetch's own once the Cache is closing (Close waits for both).
func (c *Cache) unclaim(ctx context.Context, r request) {
	ctx = context.WithoutCancel(ctx)
	drop := func() {
		ctx, cancel := context.WithTimeout(ctx, c.opts.redisTimeout)
		defer cancel()
		if err := unclaimScript.Run(ctx, c.rdb, []string{r.keys.claim}, r.token).Err(); err != nil {
			c.log.Warn("cachefill: could not clear a fill claim; the next miss waits until it expires",
				slog.String("key", r.key), slog.Any("err", err))
		}
	}
	if !c.spawn(drop) {
		drop()
	}
}

// loadMarked is loadAsHolder for an entry whose key holds a mark of
// Invalidate: it reads the mark's gen under the lock first.
func (c *Cache) loadMarked(ctx context.Context, r request, lock *dlock.Lock) (done bool, value []byte, err error) {
	e, err := c.read(ctx, r.keys, r.token)
	if err != nil || e.found() {
		c.release(ctx, r, lock, true) // nothing loaded: the entry is there, or Redis failed
		if err != nil {
			v, err := c.redisFailed(ctx, r, "read", err)
			return true, v, err
		}
		c.unclaim(ctx, r)
		v, err := e.result(r.key)
		return true, v, err
	}
	return c.loadAsHolder(ctx, r, lock, e.gen, c.startLoad(ctx, r.key, r.load))
}

// loadAsHolder finishes the load l and stores what it gives while it holds
// the key's lock, whose gen was gen before l started, and releases the
// lock: once it stored the entry, in a goroutine of its own, after Get
// returned, since the callers that wait hear of the store, not of the
// release. It reports not done when the lock was lost before the load gave
// anything: then another caller loads, and the fill waits for it.
func (c *Cache) loadAsHolder(ctx context.Context, r request, lock *dlock.Lock, gen string, l *loading) (done bool, value []byte, err error) {
	v, kept, err := c.loadAndStore(ctx, r, lock, gen, l, observe.OpLoad)
	if kept {
		// The release outlives the Get, which cancels ctx when it returns.
		ctx := context.WithoutCancel(ctx)
		if c.spawn(func() { c.release(ctx, r, lock, true) }) {
			return true, v, err
		}
	}
	lost := lock.Err() != nil // before the release, which ends the lock too
	c.release(ctx, r, lock, kept)
	if err != nil && lost && ctx.Err() == nil {
		c.log.Warn("cachefill: the loader's lock was lost while it loaded; waiting for the next loader",
			slog.String("key", r.key), slog.Any("err", lock.Err()))
		return false, nil, nil
	}
	return true, v, err
}

// loadAndStore waits for the load started as started and stores what it
// gives, while lock is held: a value or ErrNotFound (for the not-found
// ttl), but not another error. It returns the value even if storing it
// failed, and whether it stored it. It tells the Cache's observer of the
// load as op (observe.OpLoad or OpRefresh).
func (c *Cache) loadAndStore(ctx context.Context, r request, lock *dlock.Lock, gen string, started *loading, op string) (value []byte, kept bool, err error) {
	l := started.wait(lock.Done())
	s := stored{value: l.value, ttl: c.jittered(r.ttl), took: l.took, gen: gen}
	switch {
	case errors.Is(l.err, ErrNotFound):
		if c.obs != nil {
			c.observe(op, observe.OutcomeNotFound, r.key, time.Since(started.start))
		}
		if c.opts.notFoundTTL == 0 {
			return nil, false, notFound(r.key)
		}
		s.value, s.notFound, s.ttl = nil, true, c.jittered(c.opts.notFoundTTL)
		l.err = notFound(r.key)
	case l.err != nil:
		if c.obs != nil {
			c.observe(op, observe.OutcomeFailed, r.key, time.Since(started.start))
		}
		return nil, false, l.err
	}
	code, err := c.store(ctx, r.keys, lock.Token(), s)
	if c.obs != nil && !s.notFound {
		outcome := observe.OutcomeStored
		if err != nil || code == storeNotHeld {
			outcome = observe.OutcomeNotStored
		}
		c.observe(op, outcome, r.key, time.Since(started.start))
	}
	switch {
	case err != nil:
		c.log.Warn("cachefill: could not store a loaded entry", slog.String("key", r.key), slog.Any("err", err))
	case code == storeNotHeld:
		c.log.Warn("cachefill: the loader's lock was lost before it stored the entry; not stored",
			slog.String("key", r.key))
	}
	return l.value, err == nil && code != storeNotHeld, l.err
}

// release releases a loader's lock, also when its Get's context ended, so
// the waiters do not have to wait for its ttl; if the loader stored
// nothing, it tells them so (gaveUp), so that they elect the next loader.
func (c *Cache) release(ctx context.Context, r request, lock *dlock.Lock, stored bool) {
	if lock.Err() != nil {
		return // lost: nothing to release
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), c.opts.redisTimeout)
	defer cancel()
	if err := lock.Release(ctx); err != nil {
		if !errors.Is(err, dlock.ErrNotHeld) {
			c.log.Warn("cachefill: could not release the loader's lock; it expires",
				slog.String("key", r.key), slog.Any("err", err))
		}
		return
	}
	if stored {
		return
	}
	if c.obs != nil {
		c.observe(observe.OpGaveUp, "", r.key, 0)
	}
	if err := c.gaveUp(ctx, r.keys, lock.Token()); err != nil {
		c.log.Warn("cachefill: could not tell the waiting callers that the load stored nothing; they look again when its lock would have expired",
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
	return c.redisFailedLoading(ctx, r, step, err, nil)
}

// redisFailedLoading is redisFailed for a Get whose load started already
// (nil if none did): a fallback waits for it rather than starting another,
// and otherwise it is dropped.
func (c *Cache) redisFailedLoading(ctx context.Context, r request, step string, err error, started *loading) ([]byte, error) {
	fallback := c.opts.fallback && ctx.Err() == nil &&
		!errors.Is(err, ErrWrongType) && !errors.Is(err, ErrClosed) && !errors.Is(err, dlock.ErrClosed)
	if !fallback && started != nil {
		started.drop(errNoLock)
	}
	if ctx.Err() != nil {
		return nil, context.Cause(ctx)
	}
	err = fmt.Errorf("cachefill: %s %q: %w", step, r.key, err)
	if !fallback {
		return nil, err
	}
	if c.falling.CompareAndSwap(false, true) {
		c.log.Warn("cachefill: Redis failed; loading directly until it answers again", slog.String("key", r.key),
			slog.String("step", step), slog.Any("err", err))
	} else {
		c.log.Debug("cachefill: Redis failed; loading directly", slog.String("key", r.key),
			slog.String("step", step), slog.Any("err", err))
	}
	c.fallbacks.Add(1)
	if c.obs != nil {
		c.observe(observe.OpFallback, "", r.key, 0)
	}
	if started == nil {
		started = c.startLoad(ctx, r.key, r.load)
	}
	l := started.wait(nil)
	if errors.Is(l.err, ErrNotFound) {
		return nil, notFound(r.key)
	}
	return l.value, l.err
}

// observe tells the Cache's observer, which must not be nil, of op on key.
func (c *Cache) observe(op, outcome, key string, took time.Duration) {
	c.obs.ObservePackage(observe.PackageEvent{Package: observe.PackageCachefill, Op: op, Outcome: outcome, Key: key, Duration: took})
}
