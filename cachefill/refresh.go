package cachefill

import (
	"context"
	"errors"
	"log/slog"
	"math"
	"math/rand/v2"
	"time"

	"github.com/dlock-go/dlock"
	"github.com/dlock-go/dlock/observe"
)

// considerRefresh starts a background refresh of a found entry if it was
// invalidated, or if XFetch draws it: one at a time per key in a process,
// and across processes only where the key's lock is free.
func (c *Cache) considerRefresh(ctx context.Context, r request, e entry) {
	if !e.stale && !refreshDue(e.ttl, e.delta, c.opts.beta, 1-rand.Float64()) {
		return
	}
	c.mu.Lock()
	busy := c.refreshing[r.key]
	c.refreshing[r.key] = true
	c.mu.Unlock()
	if busy {
		return
	}
	done := func() {
		c.mu.Lock()
		delete(c.refreshing, r.key)
		c.mu.Unlock()
	}
	// The refresh outlives the Get: it keeps the values of its context,
	// and ends when the Cache closes.
	ctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	stop := context.AfterFunc(c.life, cancel)
	if !c.spawn(func() {
		defer done()
		defer stop()
		defer cancel()
		c.refresh(ctx, r, e)
	}) {
		stop()
		cancel()
		done()
	}
}

// refreshDue reports whether an entry with ttl left, whose load took delta,
// is to be refreshed now, for u drawn uniformly from (0, 1]: XFetch's
// test, delta·beta·(-ln u) ≥ ttl. The closer the expiry and the longer the
// load, the likelier; each Get of a hot key draws again, so one of them
// refreshes it in time. An entry without expiry (ttl < 0) is never due.
func refreshDue(ttl, delta time.Duration, beta, u float64) bool {
	if beta == 0 || ttl < 0 {
		return false
	}
	return float64(delta)*beta*-math.Log(u) >= float64(ttl)
}

// refresh loads an entry again while readers keep getting seen, the entry
// as it was: if it obtains the key's lock at once (else another caller is
// loading it) and nobody stored the entry anew since seen.
func (c *Cache) refresh(ctx context.Context, r request, seen entry) {
	lock, err := bounded(ctx, c, func(ctx context.Context) (*dlock.Lock, error) {
		return c.locker.TryObtain(ctx, r.keys.lock, c.opts.lockTTL, dlock.WithAutoRenew(true))
	})
	if err != nil {
		if !errors.Is(err, dlock.ErrNotObtained) && ctx.Err() == nil {
			c.log.Warn("cachefill: early refresh could not lock", slog.String("key", r.key), slog.Any("err", err))
		}
		return
	}
	kept := true // nobody waits for a fill of an entry that is there
	defer func() { c.release(ctx, r, lock, kept) }()
	e, err := c.read(ctx, r.keys, r.token)
	switch {
	case err != nil:
		c.log.Warn("cachefill: early refresh could not read", slog.String("key", r.key), slog.Any("err", err))
		return
	case e.found() && e.filler != seen.filler && !e.stale:
		return // refreshed meanwhile
	}
	c.refreshes.Add(1)
	_, kept, err = c.loadAndStore(ctx, r, lock, e.gen, c.startLoad(ctx, r.key, r.load), observe.OpRefresh)
	if err != nil && !errors.Is(err, ErrNotFound) {
		c.log.Warn("cachefill: early refresh failed; the entry stays as it is", slog.String("key", r.key), slog.Any("err", err))
	}
}
