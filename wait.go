package dlock

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// waiter is one call of Obtain: it tries, and between tries sleeps until
// the first of a release message, the holder's expiry, a delay of the
// Backoff, and the end of its context.
//
// It listens on the lock's channel before the try it sleeps after, so a
// release between the two cannot be missed: if the channel is already
// subscribed it starts listening before the first try, which costs nothing;
// otherwise the first try goes alone (no cost while nobody contends), and
// after a failed one it subscribes and tries again at once.
type waiter struct {
	c     *Client
	cfg   obtainConfig
	key   string
	keys  []string
	ttl   time.Duration
	watch *watch // nil until listening; nil also if subscribing failed
	timer *time.Timer
}

// subscribeTimeout bounds the wait for a subscription. A waiter that does
// not get one goes on without, woken by its timers only.
const subscribeTimeout = time.Second

func (w *waiter) obtain(ctx context.Context) (*Lock, error) {
	o := op{kind: opAcquire, keys: w.keys, token: newToken(), ttl: w.ttl}
	id := "" // woken by every release message
	if w.cfg.fair {
		// A fair waiter keeps its token, which is its place in the queue,
		// and is woken only when its turn comes (or by a plain release).
		o.lease = FairLease
		id = o.token.(string)
	}
	channel := w.keys[1]
	subscribed := w.c.subs == nil // a Redlock waits on its timers only
	if !subscribed {
		w.watch = w.c.subs.watchIfSubscribed(channel, id)
		subscribed = w.watch != nil
	}
	defer w.stop()
	wasHeld := false // an attempt found the lock held
	for sleeps := 0; ; {
		lock, r, err := w.c.try(ctx, o, w.cfg)
		if !errors.Is(err, ErrNotObtained) {
			if err != nil && wasHeld && ctx.Err() != nil && errors.Is(err, ctx.Err()) {
				// The context ended during an attempt; the last answer was "held".
				err = fmt.Errorf("%w: %s was held at the last attempt: %w", ErrNotObtained, quoteKey(w.key), err)
			}
			if err != nil && w.cfg.fair && !replyLost(err) {
				w.leave(o) // (a lost reply is cleaned up by try)
			}
			return lock, err
		}
		wasHeld = true
		if !subscribed {
			subscribed = true
			if w.subscribe(ctx, channel, id) {
				continue // try again now that no release can be missed
			}
		}
		sleeps++
		if !w.sleep(ctx, w.delay(sleeps, r)) {
			if w.cfg.fair {
				w.leave(o)
			}
			return nil, fmt.Errorf("%w: %w", err, contextError(ctx))
		}
		if !w.cfg.fair {
			o.token = newToken() // a fresh token, so a late clean-up of this attempt touches nothing later
		}
	}
}

// subscribe starts listening on the lock's channel, for at most
// subscribeTimeout. It reports whether it did.
func (w *waiter) subscribe(ctx context.Context, channel, id string) bool {
	ctx, cancel := context.WithTimeout(ctx, subscribeTimeout)
	defer cancel()
	watch, err := w.c.subs.watch(ctx, channel, id)
	if err != nil {
		w.c.logger.Debug("dlock: waiting without release messages", "key", quoteKey(w.key), "error", err)
		return false
	}
	w.watch = watch
	return true
}

// delay is how long to sleep for the n-th time (the Backoff's attempt),
// after an attempt whose reply was r, unless a release message comes first.
func (w *waiter) delay(n int, r reply) time.Duration {
	holderTTL := time.Duration(r.value) * time.Millisecond
	if w.cfg.fair && !r.head {
		// Not our turn: only a message for us, or keeping our place in
		// the queue, wakes us.
		return FairLease / 3
	}
	d := max(w.cfg.backoff.Delay(n, holderTTL), 0)
	if holderTTL >= 0 {
		d = min(d, holderTTL)
	}
	if w.cfg.fair {
		d = min(d, FairLease/3)
	}
	return d
}

// sleep waits for d, a release message, or the end of ctx, and reports
// false for the last.
func (w *waiter) sleep(ctx context.Context, d time.Duration) bool {
	if w.timer == nil {
		w.timer = time.NewTimer(d)
	} else {
		w.timer.Reset(d)
	}
	var wake <-chan struct{}
	if w.watch != nil {
		wake = w.watch.C()
	}
	select {
	case <-w.timer.C:
	case <-wake:
	case <-ctx.Done():
		return false
	}
	return true
}

// leave takes a fair waiter that gives up out of the queue, in the
// background, and lets the next one have its turn.
func (w *waiter) leave(o op) {
	w.c.releaseInBackground(o.keys, o.token, FairLease)
}

func (w *waiter) stop() {
	if w.watch != nil {
		w.watch.stop()
	}
	if w.timer != nil {
		w.timer.Stop()
	}
}
