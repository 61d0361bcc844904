// Package renew keeps holdings alive: a Renewer refreshes each holding a
// third of its ttl after its last acquire or refresh was sent, and tells
// its owner when one is lost. One goroutine keeps the holdings in a heap
// ordered by when each needs attention, and sends the refreshes that are
// due together, in one batch, so ten thousand holdings cost a few round
// trips per renewal period, not ten thousand. The refreshes of a batch run
// in a goroutine of their own, so a stalled Redis does not stop the loop
// from declaring holdings lost on time.
//
// Holdings due within a sixth of their ttl go in the batch of one that is
// due: a little early, never late. A refresh that answers "not held" ends
// the holding at once; one that fails is retried until the holding's
// validity (Until) runs out, and then it is lost.
package renew

import (
	"container/heap"
	"context"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/dlock-go/dlock/internal/owner"
)

// Holding is what a Renewer renews.
type Holding interface {
	comparable
	// Renewal is the holding's place in the renewer.
	Renewal() *State
	// Until is the holding's validity deadline.
	Until() time.Time
	// TTL is the time to live its refreshes send.
	TTL() time.Duration
	// SetTTL sets the time to live its refreshes send from now on.
	SetTTL(ttl time.Duration)
	// Extend sets the validity of a refresh with ttl, sent at sent, that
	// Redis granted.
	Extend(sent time.Time, ttl time.Duration)
	// Cap ends the validity at that of a refresh with ttl sent at sent,
	// if that is earlier.
	Cap(sent time.Time, ttl time.Duration)
	// Gone reports whether the holding ended (released or lost).
	Gone() bool
}

// Result is the answer to one refresh of a batch: held, not held (Err
// nil), or no answer (Err set).
type Result struct {
	Held bool
	Err  error
}

// Config is what a Renewer needs from its owner.
type Config[H Holding] struct {
	// Refresh sends the refreshes of batch, each holding's with the ttl of
	// its State.Sent, within ctx, and hands the answers to record as they
	// come, part by part (record may be called from several goroutines at
	// once); it returns when every part has its answer.
	Refresh func(ctx context.Context, batch []H, record func(part []H, results []Result))
	// Timeout is how long one batch may take, given the shortest ttl in it.
	Timeout func(shortest time.Duration) time.Duration
	// Lost ends h as lost, for the reason how. release: Redis may still
	// hold it (nobody said it is gone).
	Lost func(h H, how string, release bool)
	// Closed ends h because the owner closed and nothing renews it any
	// more.
	Closed func(h H)
	// Observe, if set, is told the answers of each batch, before the
	// holdings found not held are lost.
	Observe func(batch []H, results []Result)
	Logger  *slog.Logger
	Owner   *owner.Group // owns the renewer's goroutines; it stops when Owner closes
	// Key names h in log messages.
	Key func(h H) string
}

// Renewer refreshes holdings of type H. Its zero value is not usable;
// Init makes it ready.
type Renewer[H Holding] struct {
	cfg     Config[H]
	mu      sync.Mutex
	queue   holdings[H]
	kick    chan struct{} // capacity 1: the heap's first holding changed
	running bool          // the loop was started
	stopped bool          // the owner is closed
}

// Init sets up r with cfg, before its first use.
func (r *Renewer[H]) Init(cfg Config[H]) { r.cfg = cfg }

// State is a holding's place in a Renewer. Its zero value is a holding
// that was never renewed; it is guarded by the Renewer.
type State struct {
	index    int       // in the heap, plus 1; 0 when not in it
	at       time.Time // when to look at the holding next
	inflight bool      // a refresh is on its way; at is then Until
	// the ttl the refresh on its way sent, in nanoseconds; set before its
	// batch starts, read by the batch's calls, of which a Redlock node's
	// may still run when the next batch sets it (see Sent)
	sentTTL atomic.Int64
	gen     uint64 // counts the refreshes of the holding's own (Refreshed)
	sentGen uint64 // gen when the refresh on its way was sent
	// closed when the refresh on its way has its answer, for Pause; nil
	// unless Pause waits
	landed chan struct{}
}

// Sent is the ttl of the refresh on its way. A Redlock node's call of an
// earlier batch, which the quorum stopped waiting for, may read the next
// batch's: it refreshes with that ttl, and its answer counts for nothing.
func (s *State) Sent() time.Duration { return time.Duration(s.sentTTL.Load()) }

// queued reports whether the holding is in the heap; the Renewer's mu is
// held.
func (s *State) queued() bool { return s.index > 0 }

// Add starts renewing h, which was just obtained. It reports false, and
// does nothing, once the owner is closed.
func (r *Renewer[H]) Add(h H) bool {
	return r.addAt(h, time.Now().Add(h.TTL()/3))
}

// Resume renews h again after Pause, at once, unless it ended meanwhile.
// If the owner is closed, it ends h (Config.Closed).
func (r *Renewer[H]) Resume(h H) {
	if !h.Gone() && !r.addAt(h, time.Now()) {
		r.cfg.Closed(h)
	}
}

// addAt starts renewing h, first at at, unless the owner is closed.
func (r *Renewer[H]) addAt(h H, at time.Time) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.stopped {
		return false
	}
	if !r.running {
		if !r.cfg.Owner.Add(1) {
			return false
		}
		r.running = true
		r.kick = make(chan struct{}, 1)
		go r.loop()
	}
	h.Renewal().at = at
	heap.Push(&r.queue, h)
	if h.Renewal().index == 1 {
		r.signal()
	}
	return true
}

// Remove stops renewing h, if it was renewed: it was released or lost.
func (r *Renewer[H]) Remove(h H) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.unqueue(h)
}

// unqueue takes h out of the heap if it is in it; r.mu is held.
func (r *Renewer[H]) unqueue(h H) {
	s := h.Renewal()
	if s.queued() && s.index <= len(r.queue) && r.queue[s.index-1] == h {
		heap.Remove(&r.queue, s.index-1)
	}
}

// Pause stops renewing h and waits until no refresh of it is on its way.
// If ctx ends first, it renews h again and returns ctx's error. Resume
// starts renewing it again.
func (r *Renewer[H]) Pause(ctx context.Context, h H) error {
	r.mu.Lock()
	s := h.Renewal()
	var landed chan struct{}
	if s.inflight {
		if s.landed == nil {
			s.landed = make(chan struct{})
		}
		landed = s.landed
	}
	r.unqueue(h)
	r.mu.Unlock()
	if landed == nil {
		return nil
	}
	select {
	case <-landed:
		return nil
	case <-ctx.Done():
		r.Resume(h)
		return ctx.Err()
	}
}

// signal wakes the loop; r.mu is held.
func (r *Renewer[H]) signal() {
	select {
	case r.kick <- struct{}{}:
	default:
	}
}

func (r *Renewer[H]) loop() {
	defer r.cfg.Owner.Done()
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		batch, expired, wait := r.due(time.Now())
		for _, h := range expired {
			r.cfg.Lost(h, "no refresh got through before its validity ran out", true)
		}
		if len(batch) > 0 {
			r.cfg.Owner.Go(func() { r.refresh(batch) })
		}
		timer.Reset(wait)
		select {
		case <-r.kick:
		case <-timer.C:
		case <-r.cfg.Owner.Closing():
			r.stop()
			return
		}
	}
}

// due takes from the heap what needs attention at now: the holdings to
// refresh, which stay in the heap marked in flight, and those whose
// validity ran out, which leave it. It returns how long the loop may
// sleep.
func (r *Renewer[H]) due(now time.Time) (batch, expired []H, wait time.Duration) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for len(r.queue) > 0 {
		h := r.queue[0]
		s := h.Renewal()
		until := h.Until()
		switch {
		case !now.Before(until):
			heap.Pop(&r.queue)
			expired = append(expired, h)
		case s.inflight || now.Before(s.at) && (len(batch) == 0 || now.Add(h.TTL()/6).Before(s.at)):
			// Not due: the first of a batch must be due, the others may be
			// a little early. (An early first one would make a failed
			// refresh, retried a little later, due again at once.)
			return batch, expired, s.at.Sub(now)
		default:
			s.inflight = true
			s.at = until
			s.sentTTL.Store(int64(h.TTL()))
			s.sentGen = s.gen
			heap.Fix(&r.queue, 0)
			batch = append(batch, h)
		}
	}
	return batch, expired, time.Hour
}

// refresh sends one batch of refreshes and records the answers. It runs in
// a goroutine of its own, which the owner tracks.
func (r *Renewer[H]) refresh(batch []H) {
	shortest := batch[0].Renewal().Sent()
	for _, h := range batch[1:] {
		shortest = min(shortest, h.Renewal().Sent())
	}
	ctx, cancel := context.WithTimeout(context.Background(), r.cfg.Timeout(shortest))
	defer cancel()
	sent := time.Now()
	r.cfg.Refresh(ctx, batch, func(part []H, results []Result) {
		r.record(sent, part, results)
	})
}

// record takes the answers to refreshes sent at sent.
func (r *Renewer[H]) record(sent time.Time, part []H, results []Result) {
	now := time.Now()
	var notHeld []H
	r.mu.Lock()
	for i, h := range part {
		s := h.Renewal()
		s.inflight = false
		if s.landed != nil {
			close(s.landed)
			s.landed = nil
		}
		if !s.queued() {
			continue // released, lost or paused meanwhile
		}
		res := results[i]
		switch {
		case res.Err == nil && res.Held && s.sentGen != s.gen:
			// A refresh of the holding's own with another ttl went out
			// meanwhile, and which of the two Redis ran last is unknown:
			// trust the earlier end, and send the newer ttl again now.
			h.Cap(sent, s.Sent())
			s.at = now
		case res.Err == nil && res.Held:
			h.Extend(sent, s.Sent())
			s.at = sent.Add(s.Sent() / 3)
		case res.Err == nil:
			heap.Remove(&r.queue, s.index-1)
			notHeld = append(notHeld, h)
			continue
		default:
			// Try again soon; the loop ends the holding at Until.
			s.at = earlier(now.Add(retryDelay(h.TTL())), h.Until())
			r.cfg.Logger.Debug("dlock: refresh failed; retrying", "key", r.cfg.Key(h), "error", res.Err)
		}
		heap.Fix(&r.queue, s.index-1)
	}
	r.signal()
	r.mu.Unlock()
	if r.cfg.Observe != nil {
		r.cfg.Observe(part, results)
	}
	for _, h := range notHeld {
		r.cfg.Lost(h, "a refresh found it gone or taken", false)
	}
}

// retryDelay is how long the renewer waits after a failed refresh of a
// holding with ttl.
func retryDelay(ttl time.Duration) time.Duration {
	return max(ttl/20, time.Millisecond)
}

func earlier(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}

// Refreshed takes the success of a refresh of the holding's own (not the
// renewer's), sent at sent with ttl: the renewer keeps ttl from now on.
func (r *Renewer[H]) Refreshed(h H, sent time.Time, ttl time.Duration) {
	r.mu.Lock()
	defer r.mu.Unlock()
	h.SetTTL(ttl)
	s := h.Renewal()
	switch {
	case !s.queued(): // lost or released meanwhile: nothing to renew
		h.Extend(sent, ttl)
	case s.inflight:
		// A refresh with the old ttl is on its way: whichever Redis runs
		// last sets the expiry. record trusts the earlier end then, and
		// sends this ttl again.
		s.gen++
		h.Cap(sent, ttl)
	default:
		s.gen++
		h.Extend(sent, ttl)
		s.at = sent.Add(ttl / 3)
		heap.Fix(&r.queue, s.index-1)
		r.signal()
	}
}

// stop ends every holding still renewed: the owner is closing and nothing
// will refresh them any more.
func (r *Renewer[H]) stop() {
	r.mu.Lock()
	r.stopped = true
	queue := r.queue
	r.queue = nil
	for _, h := range queue {
		h.Renewal().index = 0
	}
	r.mu.Unlock()
	for _, h := range queue {
		r.cfg.Closed(h)
	}
}

// holdings orders holdings by State.at; it implements heap.Interface.
type holdings[H Holding] []H

func (q holdings[H]) Len() int           { return len(q) }
func (q holdings[H]) Less(i, j int) bool { return q[i].Renewal().at.Before(q[j].Renewal().at) }
func (q holdings[H]) Swap(i, j int) {
	q[i], q[j] = q[j], q[i]
	q[i].Renewal().index = i + 1
	q[j].Renewal().index = j + 1
}

func (q *holdings[H]) Push(x any) {
	h := x.(H)
	h.Renewal().index = len(*q) + 1
	*q = append(*q, h)
}

func (q *holdings[H]) Pop() any {
	old := *q
	h := old[len(old)-1]
	var zero H
	old[len(old)-1] = zero
	h.Renewal().index = 0
	*q = old[:len(old)-1]
	return h
}
