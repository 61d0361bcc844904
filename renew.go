package dlock

import (
	"container/heap"
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"
)

// renewer refreshes the Client's auto-renewed locks (WithAutoRenew). One
// goroutine keeps them in a heap ordered by when each needs attention, and
// sends the refreshes that are due together, one pipeline per node, so ten
// thousand locks cost a few round trips per renewal period, not ten
// thousand. The refreshes of a batch run in a goroutine of their own, so a
// stalled Redis does not stop the loop from declaring locks lost on time.
//
// A lock is refreshed a third of its ttl after its last acquire or refresh
// was sent. Locks due within a sixth of their ttl go in the batch of a lock
// that is due: a little early, never late. A refresh that answers "not
// held" ends the lock at once; one that fails is retried until the lock's
// validity (Until) runs out, and then the lock is lost.
type renewer struct {
	c       *Client
	mu      sync.Mutex
	locks   lockHeap
	kick    chan struct{} // capacity 1: the heap's first lock changed
	running bool          // the loop was started
	stopped bool          // the Client is closed
}

// renewState is a lock's place in the renewer, guarded by renewer.mu.
type renewState struct {
	index    int       // in renewer.locks; -1 when not in it
	at       time.Time // when to look at the lock next
	inflight bool      // a refresh is on its way; at is then Until
	// the ttl the refresh on its way sent, in nanoseconds; set before its
	// batch starts, read by the batch's calls, of which a Redlock node's
	// may still run when the next batch sets it (see sent)
	sentTTL atomic.Int64
	gen     uint64 // counts the Lock.Refresh calls
	sentGen uint64 // gen when the refresh on its way was sent
	// closed when the refresh on its way has its answer, for pause; nil
	// unless pause waits
	landed chan struct{}
}

// sent is the ttl of the refresh on its way. A Redlock node's call of an
// earlier batch, which the quorum stopped waiting for, may read the next
// batch's: it refreshes with that ttl, and its answer counts for nothing.
func (s *renewState) sent() time.Duration { return time.Duration(s.sentTTL.Load()) }

// add starts renewing l, which was just obtained.
func (r *renewer) add(l *Lock) error {
	return r.addAt(l, time.Now().Add(l.currentTTL()/3))
}

// resume renews l again after pause, at once, unless it ended meanwhile.
func (r *renewer) resume(l *Lock) {
	if l.gone.Load() {
		return
	}
	if r.addAt(l, time.Now()) != nil {
		l.end(fmt.Errorf("%w: %s: the Client was closed, so nothing renews it: %w", ErrLockLost, quoteKey(l.key), ErrClosed))
	}
}

// addAt starts renewing l, first at at.
func (r *renewer) addAt(l *Lock, at time.Time) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.stopped {
		return ErrClosed
	}
	if !r.running {
		if !r.c.track() {
			return ErrClosed
		}
		r.running = true
		r.kick = make(chan struct{}, 1)
		go r.loop()
	}
	l.renew.at = at
	heap.Push(&r.locks, l)
	if l.renew.index == 0 {
		r.signal()
	}
	return nil
}

// remove stops renewing l, if it was renewed: it was released or lost.
func (r *renewer) remove(l *Lock) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if l.renew.index >= 0 && l.renew.index < len(r.locks) && r.locks[l.renew.index] == l {
		heap.Remove(&r.locks, l.renew.index)
	}
}

// pause stops renewing l and waits until no refresh of it is on its way,
// or ctx ends (then it renews l again). resume starts renewing it again.
func (r *renewer) pause(ctx context.Context, l *Lock) error {
	r.mu.Lock()
	var landed chan struct{}
	if l.renew.inflight {
		if l.renew.landed == nil {
			l.renew.landed = make(chan struct{})
		}
		landed = l.renew.landed
	}
	if l.renew.index >= 0 && l.renew.index < len(r.locks) && r.locks[l.renew.index] == l {
		heap.Remove(&r.locks, l.renew.index)
	}
	r.mu.Unlock()
	if landed == nil {
		return nil
	}
	select {
	case <-landed:
		return nil
	case <-ctx.Done():
		r.resume(l)
		return fmt.Errorf("dlock: release %s: %w", quoteKey(l.key), contextError(ctx))
	}
}

// signal wakes the loop; r.mu is held.
func (r *renewer) signal() {
	select {
	case r.kick <- struct{}{}:
	default:
	}
}

func (r *renewer) loop() {
	defer r.c.wg.Done()
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		batch, expired, wait := r.due(time.Now())
		for _, l := range expired {
			r.lost(l, "no refresh got through before its validity ran out", true)
		}
		if len(batch) > 0 && r.c.track() {
			go r.refresh(batch)
		}
		timer.Reset(wait)
		select {
		case <-r.kick:
		case <-timer.C:
		case <-r.c.done:
			r.stop()
			return
		}
	}
}

// due takes from the heap what needs attention at now: the locks to
// refresh, which stay in the heap marked in flight, and the locks whose
// validity ran out, which leave it. It returns how long the loop may sleep.
func (r *renewer) due(now time.Time) (batch, expired []*Lock, wait time.Duration) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for len(r.locks) > 0 {
		l := r.locks[0]
		until := l.Until()
		switch {
		case !now.Before(until):
			heap.Pop(&r.locks)
			expired = append(expired, l)
		case l.renew.inflight || now.Before(l.renew.at) && (len(batch) == 0 || now.Add(l.currentTTL()/6).Before(l.renew.at)):
			// Not due: the first of a batch must be due, the others may be
			// a little early. (An early first one would make a failed
			// refresh, retried a little later, due again at once.)
			return batch, expired, l.renew.at.Sub(now)
		default:
			l.renew.inflight = true
			l.renew.at = until
			l.renew.sentTTL.Store(int64(l.currentTTL()))
			l.renew.sentGen = l.renew.gen
			heap.Fix(&r.locks, 0)
			batch = append(batch, l)
		}
	}
	return batch, expired, time.Hour
}

// refresh sends one batch of refreshes and records the answers. It runs in
// a goroutine of its own, tracked by the Client.
func (r *renewer) refresh(batch []*Lock) {
	defer r.c.wg.Done()
	// One attempt gets a sixth of the shortest ttl (on a Redlock, at least
	// the node timeout): go-redis would go on
	// retrying a dead server for seconds, on an old Cluster slot map, while
	// a fresh attempt a little later finds the new primary.
	shortest := batch[0].renew.sent()
	for _, l := range batch[1:] {
		shortest = min(shortest, l.renew.sent())
	}
	timeout := max(shortest/6, minRefreshTimeout)
	if q := r.c.quorum; q != nil {
		// A Redlock round gives each node the node timeout: a batch cut
		// shorter would fail on nodes that are slow, not dead.
		timeout = max(timeout, q.timeout)
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	sent := time.Now()
	r.c.refreshMany(ctx, batch, func(locks []*Lock, results []refreshResult) {
		r.record(sent, locks, results)
	})
}

// record takes the answers to refreshes sent at sent.
func (r *renewer) record(sent time.Time, locks []*Lock, results []refreshResult) {
	now := time.Now()
	var notHeld []*Lock
	r.mu.Lock()
	for i, l := range locks {
		l.renew.inflight = false
		if l.renew.landed != nil {
			close(l.renew.landed)
			l.renew.landed = nil
		}
		if l.renew.index < 0 {
			continue // released, lost or paused meanwhile
		}
		res := results[i]
		switch {
		case res.err == nil && res.held && l.renew.sentGen != l.renew.gen:
			// A Refresh with another ttl went out meanwhile, and which of
			// the two Redis ran last is unknown: trust the earlier end,
			// and send the Refresh's ttl again now.
			l.until.Store(min(l.until.Load(), l.untilOf(sent, l.renew.sent())))
			l.renew.at = now
		case res.err == nil && res.held:
			l.setUntil(sent, l.renew.sent())
			l.renew.at = sent.Add(l.renew.sent() / 3)
		case res.err == nil:
			heap.Remove(&r.locks, l.renew.index)
			notHeld = append(notHeld, l)
			continue
		default:
			// Try again soon; the loop ends the lock at Until.
			l.renew.at = earlier(now.Add(retryDelay(l.currentTTL())), l.Until())
			r.c.logger.Debug("dlock: refresh failed; retrying", "key", quoteKey(l.key), "error", res.err)
		}
		heap.Fix(&r.locks, l.renew.index)
	}
	r.signal()
	r.mu.Unlock()
	if r.c.obs != nil {
		r.c.observeRefreshes(locks, results)
	}
	for _, l := range notHeld {
		r.lost(l, "a refresh found it gone or taken", false)
	}
}

// minRefreshTimeout is the least time a batch of refreshes is given.
const minRefreshTimeout = 50 * time.Millisecond

// retryDelay is how long the renewer waits after a failed refresh.
func retryDelay(ttl time.Duration) time.Duration {
	return max(ttl/20, time.Millisecond)
}

func earlier(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}

// refreshed takes the success of a Lock.Refresh of the renewed lock l, sent
// at sent with ttl: the renewer keeps ttl from now on.
func (r *renewer) refreshed(l *Lock, sent time.Time, ttl time.Duration) {
	r.mu.Lock()
	defer r.mu.Unlock()
	l.ttl.Store(int64(ttl))
	switch {
	case l.renew.index < 0: // lost or released meanwhile: nothing to renew
		l.setUntil(sent, ttl)
	case l.renew.inflight:
		// A refresh with the old ttl is on its way: whichever Redis runs
		// last sets the expiry. record trusts the earlier end then, and
		// sends this ttl again.
		l.renew.gen++
		l.until.Store(min(l.until.Load(), l.untilOf(sent, ttl)))
	default:
		l.renew.gen++
		l.setUntil(sent, ttl)
		l.renew.at = sent.Add(ttl / 3)
		heap.Fix(&r.locks, l.renew.index)
		r.signal()
	}
}

// lost ends l as lost. If Redis may still hold the key for it (the lock
// timed out, nobody said it is gone), the key is released in the
// background, so the next holder need not wait for its expiry.
func (r *renewer) lost(l *Lock, how string, release bool) {
	if l.end(l.lostError(how)) {
		r.c.logger.Warn("dlock: lock lost", "key", quoteKey(l.key), "reason", how)
		if release {
			r.c.releaseInBackground(l.attempt())
		}
	}
}

// stop ends every lock still renewed: the Client is closing and nothing
// will refresh them any more.
func (r *renewer) stop() {
	r.mu.Lock()
	r.stopped = true
	locks := r.locks
	r.locks = nil
	for _, l := range locks {
		l.renew.index = -1
	}
	r.mu.Unlock()
	for _, l := range locks {
		l.end(fmt.Errorf("%w: %s: the Client was closed, so nothing renews it: %w", ErrLockLost, quoteKey(l.key), ErrClosed))
	}
}

// lockHeap orders locks by renewState.at; it implements heap.Interface.
type lockHeap []*Lock

func (h lockHeap) Len() int           { return len(h) }
func (h lockHeap) Less(i, j int) bool { return h[i].renew.at.Before(h[j].renew.at) }
func (h lockHeap) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].renew.index = i
	h[j].renew.index = j
}

func (h *lockHeap) Push(x any) {
	l := x.(*Lock)
	l.renew.index = len(*h)
	*h = append(*h, l)
}

func (h *lockHeap) Pop() any {
	old := *h
	l := old[len(old)-1]
	old[len(old)-1] = nil
	l.renew.index = -1
	*h = old[:len(old)-1]
	return l
}
