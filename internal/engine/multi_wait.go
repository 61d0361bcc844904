package engine

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/dlock-go/dlock/internal/wake"
)

// acquireMulti is Acquire for KindMulti: it takes the locks of the sorted
// keys (see Engine.MultiKeys) all at once, waiting if wait (and not
// cfg.NoWait), else in one attempt.
func (e *Engine) acquireMulti(ctx context.Context, keys []string, ttl time.Duration, wait bool, cfg Config) (*Hold, Seen, error) {
	if !wait || cfg.NoWait {
		h, _, err := e.takeMulti(ctx, e.multiAttempt(keys, ttl, cfg), cfg)
		return h, Seen{Attempts: 1}, err
	}
	w := multiWaiter{e: e, cfg: cfg, keys: keys, ttl: ttl}
	defer w.stop()
	h, err := w.obtain(ctx)
	return h, w.seen, err
}

// multiWaiter is one call of ObtainMulti: it tries to take every lock at
// once, and between tries sleeps until the first of a release of any of
// them, the longest remaining time of those held, a delay of the Backoff,
// and the end of its context. It joins no queue of waiters (a queue is one
// lock's: a waiter for several would hold a place in each, and a release
// of one could hand it that lock alone), so a release of one of its locks
// wakes it as it wakes every waiter that listens (see waiter, on a
// Redlock); a fair waiter of one of the locks may take it first.
//
// It listens on each lock's watch channel, on which every release of the
// lock publishes whatever it does with the lock (release.lua,
// multi_release.lua), subscribed after the first try that found a lock
// held and before the next: a release between the two cannot be missed.
type multiWaiter struct {
	e       *Engine
	cfg     Config
	keys    []string // sorted, each once
	ttl     time.Duration
	watches []*wake.Watch
	wake    chan struct{} // the watches' wake-ups, shared
	timer   *time.Timer
	seen    Seen
}

func (w *multiWaiter) obtain(ctx context.Context) (*Hold, error) {
	listening := false
	for sleeps := 0; ; {
		// A fresh token for every attempt: a failed attempt on a Redlock is
		// taken back in the background on the nodes that had not answered,
		// and with the same token that would delete what a later attempt won
		// there. Unlike a lock's, a multi-key attempt is named by nothing
		// else, so a single deployment does the same.
		a := w.e.multiAttempt(w.keys, w.ttl, w.cfg)
		w.seen.Attempts++
		h, r, err := w.e.takeMulti(ctx, a, w.cfg)
		if !errors.Is(err, ErrNotObtained) {
			if err != nil && sleeps > 0 && ctx.Err() != nil && errors.Is(err, ctx.Err()) {
				err = fmt.Errorf("%w: a key was held at the last attempt: %w", ErrNotObtained, err)
			}
			return h, err
		}
		if !listening {
			listening = true
			if w.subscribe(ctx) {
				continue // try again now that no release can be missed
			}
		}
		if sleeps == 0 && w.e.hooks != nil {
			w.seen.WaitStart = time.Now()
			w.e.hooks.WaitStart(ctx, KindMulti, w.keys[0], false)
		}
		sleeps++
		if !w.sleep(ctx, w.delay(sleeps, r)) {
			return nil, w.e.withFailures(fmt.Errorf("%w: %w", err, contextError(ctx)), w.keys[0])
		}
	}
}

// subscribe listens on the watch channel of every lock, on every node, for
// at most subscribeTimeout, and reports whether every channel is
// confirmed by enough nodes: one for a single deployment, N-Q+1 of a
// Redlock of N nodes and a quorum of Q (see waiter.subscribe). Otherwise
// the waiter goes on with its timers only.
func (w *multiWaiter) subscribe(ctx context.Context) bool {
	ctx, cancel := context.WithTimeout(ctx, subscribeTimeout)
	defer cancel()
	w.wake = make(chan struct{}, 1)
	type result struct {
		key   int
		watch *wake.Watch
	}
	results := make(chan result, len(w.keys)*len(w.e.subs))
	for i, key := range w.keys {
		channel := sideKey(watchKind, key)
		for _, s := range w.e.subs {
			go func() {
				watch, err := s.WatchWith(ctx, channel, "", w.wake)
				if err != nil {
					watch = nil
				}
				results <- result{i, watch}
			}()
		}
	}
	confirmed := make([]int, len(w.keys))
	for range cap(results) {
		r := <-results
		if r.watch != nil {
			confirmed[r.key]++
			w.watches = append(w.watches, r.watch)
		}
	}
	need := 1
	if q := w.e.quorum; q != nil {
		need = len(q.nodes) - q.need + 1
	}
	for _, n := range confirmed {
		if n < need {
			w.e.logger.Debug("dlock: waiting without release messages", "key", QuoteKey(w.keys[0]))
			return false
		}
	}
	return true
}

// delay is how long to sleep for the n-th time, after an attempt whose
// reply was r, unless a release message comes first: the Backoff's delay,
// at least listeningMinDelay while listening, at most the longest
// remaining time of the locks held (r.value, negative if unknown).
func (w *multiWaiter) delay(n int, r reply) time.Duration {
	d := max(w.cfg.Backoff.Delay(n, time.Duration(r.value)*time.Millisecond), 0)
	if len(w.watches) > 0 {
		d = max(d, listeningMinDelay)
	}
	if r.value >= 0 {
		d = min(d, time.Duration(r.value)*time.Millisecond)
	}
	return d
}

// sleep waits for d, a release message, or the end of ctx, and reports
// false for the last.
func (w *multiWaiter) sleep(ctx context.Context, d time.Duration) bool {
	return w.e.sleep(ctx, &w.timer, d, w.wake, &w.seen)
}

func (w *multiWaiter) stop() {
	for _, watch := range w.watches {
		watch.Stop()
	}
	if w.timer != nil {
		w.timer.Stop()
	}
}
