package engine

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/dlock-go/dlock/internal/wake"
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
//
// On a single deployment a waiter that listens joins the lock's queue of
// waiters with that try (see queue_acquire.lua), naming its Client's own
// channel: a release then wakes the first waiter of the queue alone, on
// that channel, or in fair mode hands the lock over to it. So a release
// costs one attempt, not one per waiter. A waiter in the queue keeps its
// place by trying again within its lease, and leaves the queue when it
// gives up. A Redlock has no queue: a release wakes every waiter that
// listens.
//
// Every waiter, first in the queue or not, also wakes when the holder's
// time to live runs out, as its last try saw it (the others a little after
// the first, which goes first if it can): nothing tells of an expiry, and
// the first waiter may be unable to try. So an expired lock is taken
// within a timer and a round trip of its expiry, plus behindFirstGrace if
// the first cannot try, as long as its holders use one ttl. If a holder
// with a shorter ttl follows one with a longer, its lock can expire before
// the time the waiters saw: they take it at that time, or a third of their
// lease after their last try, if that comes first.
type waiter struct {
	e       *Engine
	kind    *Kind
	limit   any // a semaphore's, boxed; nil for other kinds
	cfg     Config
	key     string
	keys    []string
	ttl     time.Duration
	watches []*wake.Watch // one per node listened to; none until listening, or if subscribing failed
	wake    chan struct{} // the watches' wake-ups; nil until the first watch
	timer   *time.Timer
	seen    Seen // for the Hooks and the caller
}

// listeningMinDelay is the shortest Backoff delay of a waiter that listens
// for release messages.
const listeningMinDelay = 25 * time.Millisecond

// waitLease is the lease of a barging waiter (not WithFair) in the queue:
// how long it keeps its place without trying again. Only the first in the
// queue tries on its own before a release wakes it, and the others renew
// their place a third of this apart: longer than FairLease, as a barging
// waiter that dies holds nobody up, unlike a fair one that a release
// handed the lock to (see release.lua).
const waitLease = 3 * FairLease

// behindFirstGrace is how much later than the holder's expiry a waiter
// behind the first of the queue tries: the first, if it can, takes the
// lock in its turn, and the others find it held. Small next to the time a
// waiter may take to notice an expiry (at least 100ms).
const behindFirstGrace = 20 * time.Millisecond

// subscribeTimeout bounds the wait for a subscription. A waiter that does
// not get one goes on without, woken by its timers only.
const subscribeTimeout = time.Second

func (w *waiter) obtain(ctx context.Context) (*Hold, error) {
	a := w.e.newAttempt(w.kind, w.keys, w.ttl, w.limit, w.cfg)
	queues := w.e.quorum == nil // a Redlock has no queue
	id := ""                    // woken by every release message
	if queues {
		// A waiter of the queue keeps its name, which is its place there,
		// and is woken only when its turn comes (or by a message for all).
		id = a.arg.(string)
	}
	channel := w.keys[1]
	subscribed := w.listenIfSubscribed(channel, id) || queues && w.listenQueued(channel, id)
	defer w.stop()
	if queues && subscribed {
		w.join(&a)
	}
	// Otherwise the first try does not queue (lease 0): it takes the lock
	// if it is free (in fair mode, and nobody waits). Found held, the
	// waiter subscribes, which also confirms the Client's own channel, and
	// joins the queue with it at once.
	wasHeld := false // an attempt found the lock held
	var sent time.Time
	for sleeps, attempts := 0, 0; ; attempts++ {
		if attempts > 0 && w.e.quorum != nil {
			// A fresh token for every attempt on a Redlock: a failed attempt
			// is taken back in the background on the nodes that had not
			// answered, and with the same token that would delete what a
			// later attempt won there.
			a.newToken(w.cfg)
		}
		sent = time.Now()
		w.seen.Attempts++
		lock, r, err := w.e.try(ctx, a, w.cfg)
		if !errors.Is(err, ErrNotObtained) {
			if err != nil && wasHeld && ctx.Err() != nil && errors.Is(err, ctx.Err()) {
				// The context ended during an attempt; the last answer was "held".
				err = fmt.Errorf("%w: %s was held at the last attempt: %w", ErrNotObtained, QuoteKey(w.key), err)
			}
			if err != nil && a.queued() && !replyLost(err) && !refusedByACL(err) {
				w.leave(a) // (a lost reply is cleaned up by try; a refused one did nothing)
			}
			return lock, err
		}
		wasHeld = true
		if !subscribed {
			subscribed = true
			listening := w.subscribe(ctx, channel, id)
			if queues && (listening || w.cfg.Fair) && a.lease == 0 {
				w.join(&a)
				continue // join the queue now
			}
			if listening {
				continue // try again now that no release can be missed
			}
		}
		if sleeps == 0 && w.e.hooks != nil {
			w.seen.WaitStart = time.Now()
			w.e.hooks.WaitStart(ctx, w.kind, w.key, w.cfg.Record)
		}
		sleeps++
		if !w.sleep(ctx, w.delay(sleeps, a, r)) {
			if a.queued() {
				w.leave(a)
			}
			return nil, w.e.withFailures(fmt.Errorf("%w: %w", err, contextError(ctx)), w.key)
		}
		if lock := w.handedOver(a, sent); lock != nil {
			w.seen.Handoff = true
			return lock, nil
		}
		a.woken = w.takeWoken()
	}
}

// join makes the attempt a join the queue from its next try on, told of a
// handoff or of its turn on the Client's own channel if Redis has
// confirmed it (see wake.Subscriber.HandoffChannel). Both stay as they are for
// the rest of the wait: with the token, they name the waiter in the queue.
func (w *waiter) join(a *attempt) {
	a.lease = waitLease
	if w.cfg.Fair {
		a.lease = FairLease
	}
	a.notify = w.e.subs[0].HandoffChannel()
}

// listenIfSubscribed listens on the lock's channel if every node's
// subscriber has it subscribed already, which costs no round trip, and
// reports whether it does.
func (w *waiter) listenIfSubscribed(channel, id string) bool {
	for _, s := range w.e.subs {
		watch := s.WatchIfSubscribedWith(channel, id, w.wake)
		if watch == nil {
			w.stopWatches()
			return false
		}
		if w.wake == nil {
			w.wake = watch.Shared() // the first watch's; the others share it
		}
		w.watches = append(w.watches, watch)
	}
	return true
}

// listenQueued listens for the wake-ups of a waiter in the lock's queue,
// which come on the Client's own channel, if that is confirmed already, and
// reports whether it does (see wake.Subscriber.WatchQueued).
func (w *waiter) listenQueued(channel, id string) bool {
	watch := w.e.subs[0].WatchQueued(channel, id)
	if watch == nil {
		return false
	}
	w.wake = watch.Shared()
	w.watches = append(w.watches, watch)
	return true
}

// subscribe starts listening on the lock's channel, on every node at once,
// waiting for at most subscribeTimeout. It reports whether enough nodes
// confirmed: one for a single deployment; for a Redlock of N nodes and a
// quorum of Q, N-Q+1, so that any quorum that releases the lock, and
// publishes on each of its nodes, includes one of them.
func (w *waiter) subscribe(ctx context.Context, channel, id string) bool {
	ctx, cancel := context.WithTimeout(ctx, subscribeTimeout)
	defer cancel()
	type result struct {
		watch *wake.Watch
		err   error
	}
	if w.wake == nil {
		w.wake = make(chan struct{}, 1)
	}
	wake := w.wake
	results := make(chan result, len(w.e.subs))
	for _, s := range w.e.subs[1:] {
		go func() {
			watch, err := s.WatchWith(ctx, channel, id, wake)
			results <- result{watch, err}
		}()
	}
	watch, err := w.e.subs[0].WatchWith(ctx, channel, id, wake) // a single deployment's: no goroutine
	results <- result{watch, err}
	need := 1
	if q := w.e.quorum; q != nil {
		need = len(q.nodes) - q.need + 1
	}
	for range w.e.subs {
		r := <-results
		if r.err != nil {
			err = r.err
			continue
		}
		w.watches = append(w.watches, r.watch)
		if len(w.watches) == need {
			cancel() // enough: a dead node must not hold the waiter up
		}
	}
	if len(w.watches) < need {
		w.e.logger.Debug("dlock: waiting without release messages", "key", QuoteKey(w.key), "error", err)
		w.stopWatches()
		return false
	}
	return true
}

// delay is how long to sleep for the n-th time (the Backoff's attempt),
// after the attempt a whose reply was r, unless a release message comes
// first.
//
// Whatever else, a waiter wakes when the holder's time to live runs out, as
// r gave it: the first waiter of the queue, the one a release would wake,
// may be unable to try (its Client frozen, or it froze with the lock a
// release handed over to it), and nothing tells the others of an expiry.
// So each wakes at the holder's expiry as it last saw it, and if the lock
// changed hands meanwhile, its try tells it the new holder's time to live.
// A waiter behind the first wakes behindFirstGrace later, to keep to the
// queue's order when the first can try.
func (w *waiter) delay(n int, a attempt, r reply) time.Duration {
	var d time.Duration
	if a.lease > 0 && !r.head {
		// Not our turn: only a message for us, keeping our place in the
		// queue, or the holder's expiry wakes us; at the expiry, a little
		// after the first waiter, which takes the lock if it can.
		d = a.lease / 3
		if r.value >= 0 {
			d = min(d, time.Duration(r.value)*time.Millisecond+behindFirstGrace)
		}
	} else {
		d = max(w.cfg.Backoff.Delay(n, time.Duration(r.value)*time.Millisecond), 0)
		if len(w.watches) > 0 {
			// A release wakes us: the Backoff only covers holders that
			// release without a message, and need not poll as often.
			d = max(d, listeningMinDelay)
		}
		if a.lease > 0 {
			d = min(d, a.lease/3)
		}
		if r.value >= 0 { // negative: no expiry, or none we know of
			d = min(d, time.Duration(r.value)*time.Millisecond)
		}
	}
	return d
}

// takeWoken reports whether a release woke this waiter, the first of the
// queue, to try, since the last call.
func (w *waiter) takeWoken() bool {
	return len(w.watches) > 0 && w.watches[0].TakeWoken()
}

// sleep waits for d, a release message, or the end of ctx, and reports
// false for the last.
func (w *waiter) sleep(ctx context.Context, d time.Duration) bool {
	return w.e.sleep(ctx, &w.timer, d, w.wake, &w.seen)
}

// sleep waits on *timer (made at the first sleep) for d, for a message on
// wake (nil while not listening: never ready), for Close, or for the end
// of ctx, notes in seen whether a message woke it, and reports false for
// the end of ctx. After Close, the next try says ErrClosed.
func (e *Engine) sleep(ctx context.Context, timer **time.Timer, d time.Duration, wake <-chan struct{}, seen *Seen) bool {
	if *timer == nil {
		*timer = time.NewTimer(d)
	} else {
		(*timer).Reset(d)
	}
	seen.Woken = false
	select {
	case <-(*timer).C:
	case <-wake:
		seen.Woken = true
	case <-e.own.Closing():
	case <-ctx.Done():
		return false
	}
	return true
}

// handedOver returns the lock a release handed over to this waiter, if
// one did. The release set the lock for our ttl, at most FairLease (see
// release.lua), after our last attempt was sent at sent, so its
// validity counts from then. If our ttl is longer, or that leaves less than
// half of it (we waited long since), handedOver returns nil, and the next
// attempt, which finds the lock ours, sets the time to live again from its
// own start, for the whole ttl.
func (w *waiter) handedOver(a attempt, sent time.Time) *Hold {
	if !a.queued() || len(w.watches) == 0 {
		return nil
	}
	payload, ok := w.watches[0].TakeHandoff()
	if !ok || a.ttl > FairLease {
		return nil
	}
	fence, err := strconv.ParseInt(payload, 10, 64)
	if err != nil || time.Until(sent.Add(a.ttl-drift(a.ttl))) < a.ttl/2 {
		return nil
	}
	lock, err := w.e.hold(a, reply{code: acquired, value: fence}, sent, w.cfg)
	if err != nil {
		w.leave(a) // closed meanwhile: give it back
		return nil
	}
	return lock
}

// leave takes a fair waiter that gives up out of the queue, in the
// background, and lets the next one have its turn. Once the Client is
// closed, it does so before Obtain returns, in the caller's goroutine: a
// waiter that Close ended leaves at once, not when its lease runs out.
func (w *waiter) leave(a attempt) {
	if w.e.own.Go(func() { w.e.releaseLate(a) }) {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), min(a.ttl, closedLeaveTimeout))
	defer cancel()
	_, _ = w.e.run(ctx, a.undo(false)) // best effort: else its lease runs out
}

// closedLeaveTimeout bounds the leave of a fair waiter ended by Close.
const closedLeaveTimeout = time.Second

func (w *waiter) stop() {
	w.stopWatches()
	if w.timer != nil {
		w.timer.Stop()
	}
}

// stopWatches ends the waiter's watches; those it never slept on do not
// keep their channel subscribed (see wake.Watch.StopUnused).
func (w *waiter) stopWatches() {
	for _, watch := range w.watches {
		if w.timer != nil {
			watch.Stop()
		} else {
			watch.StopUnused()
		}
	}
	w.watches = w.watches[:0]
}

// pttlDuration is a PTTL in milliseconds as a Duration: -1 (one nanosecond
// under zero) for none, as go-redis does.
func pttlDuration(ms int64) time.Duration {
	if ms < 0 {
		return -1
	}
	return time.Duration(ms) * time.Millisecond
}

// withFailures returns err, the error of a call on the lock named key that
// its context ended, naming also the failures its nodes are in, those that
// err does not name already. Observers are not told of them again: the
// calls that met them tell of their own failures.
func (e *Engine) withFailures(err error, key string) error {
	for _, n := range e.nodes {
		f := n.last.Load()
		if f != nil && !errors.Is(err, f.err) {
			err = fmt.Errorf("%w; %w", err, n.errorOf("acquire", key, f.describe()))
		}
	}
	return err
}

// Seen is what an acquire that waits notes for its observer. The waiter
// keeps it up to date whether or not one is set: a few stores, no call.
type Seen struct {
	Attempts  int
	Woken     bool      // the last sleep ended by a release message
	Handoff   bool      // a release handed the hold over
	WaitStart time.Time // Hooks.WaitStart was told; zero otherwise
}
