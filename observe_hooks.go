package dlock

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/dlock-go/dlock/internal/renew"
	"github.com/dlock-go/dlock/observe"
)

// The Client calls into this file only where an Observer is set (c.obs,
// n.obs, l.obs not nil), so that a Client without one builds no Event and
// allocates nothing for them.

// observers are the Observers of a Client; nil without any.
type observers struct {
	all   []observe.Observer
	calls []observe.CallObserver // those of all that are told when a call starts
}

func newObservers(all []observe.Observer) *observers {
	if len(all) == 0 {
		return nil
	}
	o := &observers{all: all}
	for _, each := range all {
		if c, ok := each.(observe.CallObserver); ok {
			o.calls = append(o.calls, c)
		}
	}
	return o
}

// tell tells every Observer of e.
func (o *observers) tell(e observe.Event) {
	for _, each := range o.all {
		each.Observe(e)
	}
}

// start tells the CallObservers that a call of type t on a hold of kind
// on key, a record if record, starts, and returns the context the call
// runs under.
func (o *observers) start(ctx context.Context, t observe.EventType, kind *holdKind, key, node string, record bool) context.Context {
	for _, c := range o.calls {
		if next := c.StartCall(observe.Event{Type: t, Kind: kind.name, Key: key, Node: node, Context: ctx, Record: record}); next != nil {
			ctx = next
		}
	}
	return ctx
}

// nodeError tells of e, just made by node.wrap, unless it only says that
// the caller's context ended first: the call goes on, and tells of its
// own failure if it fails.
func (o *observers) nodeError(e *NodeError) {
	var noAnswer *noAnswerError
	if errors.As(e.Err, &noAnswer) {
		return
	}
	o.tell(observe.Event{Type: observe.EventNodeError, Key: e.Key, Node: e.Node, Op: e.Op, Err: e.Err})
}

// deployment names the Client's deployment for the events of its calls;
// "" for a Redlock.
func (c *Client) deployment() string {
	if c.node != nil {
		return c.node.name
	}
	return ""
}

// waitSeen is what an obtain that waits notes for its EventObtain. The
// waiter keeps it up to date whether or not an Observer is set: a few
// stores, no call.
type waitSeen struct {
	attempts  int
	woken     bool      // the last sleep ended by a release message
	handoff   bool      // a release handed the lock over
	waitStart time.Time // EventWaitStart was told; zero otherwise
}

// observeWaitStart tells that w starts to wait.
func (w *waiter) observeWaitStart(ctx context.Context) {
	w.seen.waitStart = time.Now()
	w.c.obs.tell(observe.Event{Type: observe.EventWaitStart, Kind: w.kind.name, Key: w.key, Context: ctx, Node: w.c.deployment(), Record: w.cfg.record})
}

// observedObtain is acquireHold with an Observer: it obtains a hold of kind
// on keys[0], waiting if wait (and not WithoutWait), as Obtain, Acquire,
// RLock, ... do, and tells how it went.
func (c *Client) observedObtain(ctx context.Context, kind *holdKind, keys []string, ttl time.Duration, limit any, wait bool, cfg obtainConfig) (*Lock, error) {
	start, key := time.Now(), keys[0]
	ctx = c.obs.start(ctx, observe.EventObtain, kind, key, c.deployment(), cfg.record)
	lock, seen, err := c.acquireSeen(ctx, kind, keys, ttl, limit, wait, cfg)
	e := observe.Event{Type: observe.EventObtain, Kind: kind.name, Key: key, Context: ctx, Node: c.deployment(), Err: err,
		Result: obtainResult(ctx, err), Attempts: seen.attempts, Woken: seen.woken, Handoff: seen.handoff, Record: cfg.record}
	end := time.Now()
	e.Duration = end.Sub(start)
	if !seen.waitStart.IsZero() {
		e.Wait = end.Sub(seen.waitStart)
		c.obs.tell(observe.Event{Type: observe.EventWaitEnd, Kind: e.Kind, Key: key, Context: ctx, Node: e.Node, Wait: e.Wait, Result: e.Result, Record: e.Record})
	}
	if seen.handoff {
		c.obs.tell(observe.Event{Type: observe.EventHandoff, Kind: e.Kind, Key: key, Context: ctx, Node: e.Node, Record: e.Record})
	}
	if lock != nil && !lock.renewed {
		lock.obs.watchExpiry(lock)
	}
	c.obs.tell(e)
	return lock, err
}

// obtainResult tells how an obtain that returned err ended.
func obtainResult(ctx context.Context, err error) observe.ObtainResult {
	switch {
	case err == nil:
		return observe.ResultObtained
	case errors.Is(err, context.DeadlineExceeded) && ctx.Err() != nil:
		return observe.ResultTimedOut
	case errors.Is(err, context.Canceled) && ctx.Err() != nil:
		return observe.ResultCanceled
	case errors.Is(err, ErrNotObtained):
		return observe.ResultHeld
	}
	return observe.ResultFailed
}

// lockObs is what a Lock of a Client with an Observer keeps for it.
type lockObs struct {
	obtained time.Time
	ended    atomic.Bool // an event with Ended was told
	mu       sync.Mutex
	expiry   *time.Timer // without auto-renew: tells EventLost at Until
}

// observeHold starts the bookkeeping of l, just obtained.
func (c *Client) observeHold(l *Lock) {
	l.obs = &lockObs{obtained: time.Now()}
}

// watchExpiry tells how l ended once its validity runs out (nothing renews
// it), unless it ended before: otherwise a lock left to expire would count
// as held for ever. A lock is lost then; a record, released.
func (o *lockObs) watchExpiry(l *Lock) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if !o.ended.Load() {
		o.expiry = time.AfterFunc(time.Until(l.Until()), l.observeExpiry)
	}
}

func (l *Lock) observeExpiry() {
	if left := time.Until(l.Until()); left > 0 { // a Refresh moved it
		l.obs.mu.Lock()
		if !l.obs.ended.Load() {
			l.obs.expiry.Reset(left)
		}
		l.obs.mu.Unlock()
		return
	}
	if l.record {
		l.observeRecordEnd()
		return
	}
	l.observeLost(l.lostError("its validity ran out without a refresh or a release"), observe.LostExpired)
}

// observeRecordEnd tells that the record l ran out, as its holder meant:
// an EventRelease that no call ends, unless an event ended l already.
func (l *Lock) observeRecordEnd() {
	if !l.obs.ended.CompareAndSwap(false, true) {
		return
	}
	l.client.obs.tell(observe.Event{Type: observe.EventRelease, Kind: l.kind.name, Key: l.key, Node: l.client.deployment(), Record: true,
		Held: time.Since(l.obs.obtained), Ended: true})
}

// observeEnd takes the end of l, for err (see Lock.end).
func (l *Lock) observeEnd(err error) {
	l.obs.mu.Lock()
	if l.obs.expiry != nil {
		l.obs.expiry.Stop()
	}
	l.obs.mu.Unlock()
	if !errors.Is(err, ErrLockLost) {
		return // released: observeRelease tells
	}
	reason := observe.LostNotHeld
	switch {
	case errors.Is(err, ErrClosed):
		reason = observe.LostClosed
	case !time.Now().Before(l.Until()):
		reason = observe.LostExpired
	}
	l.observeLost(err, reason)
}

// observeLost tells EventLost, unless an event ended l already.
func (l *Lock) observeLost(err error, reason observe.LostReason) {
	if !l.obs.ended.CompareAndSwap(false, true) {
		return
	}
	l.client.obs.tell(observe.Event{Type: observe.EventLost, Kind: l.kind.name, Key: l.key, Err: err, Reason: reason,
		Held: time.Since(l.obs.obtained), Ended: true, Record: l.record})
}

// startCall tells the CallObservers that a call of type t on l starts.
func (l *Lock) startCall(ctx context.Context, t observe.EventType) context.Context {
	return l.client.obs.start(ctx, t, l.kind, l.key, l.client.deployment(), l.record)
}

// observeRelease tells how a release that started at start ended.
func (l *Lock) observeRelease(ctx context.Context, start time.Time, err *error) {
	now := time.Now()
	l.client.obs.tell(observe.Event{Type: observe.EventRelease, Kind: l.kind.name, Key: l.key, Context: ctx, Node: l.client.deployment(),
		Err: *err, Duration: now.Sub(start), Held: now.Sub(l.obs.obtained), Record: l.record,
		Ended: *err == nil && l.obs.ended.CompareAndSwap(false, true)})
}

// observeRefresh tells how a Lock.Refresh that started at start ended.
func (l *Lock) observeRefresh(ctx context.Context, start time.Time, err *error) {
	l.client.obs.tell(observe.Event{Type: observe.EventRefresh, Kind: l.kind.name, Key: l.key, Context: ctx, Node: l.client.deployment(),
		Err: *err, Duration: time.Since(start), Record: l.record})
}

// observeRefreshes tells the answers of a renewer batch, before the locks
// found not held are ended.
func (c *Client) observeRefreshes(locks []*renewedLock, results []renew.Result) {
	for i, h := range locks {
		l := h.lock()
		if l.gone.Load() || l.obs == nil {
			continue // released or lost meanwhile
		}
		e := observe.Event{Type: observe.EventRefresh, Kind: l.kind.name, Key: l.key, Node: c.deployment(), Auto: true, Err: results[i].Err, Record: l.record}
		if e.Err == nil && !results[i].Held {
			e.Err = l.notHeld("refresh")
		}
		c.obs.tell(e)
	}
}

// startDo tells the CallObservers that a Do on a hold of kind on key
// starts, and returns the context it runs under.
func (c *Client) startDo(ctx context.Context, kind *holdKind, key string) context.Context {
	return c.obs.start(ctx, observe.EventDo, kind, key, c.deployment(), false)
}

// observeDo tells how a Do on a hold of kind on key, started at start,
// ended.
func (c *Client) observeDo(ctx context.Context, kind *holdKind, key string, start time.Time, err *error) {
	c.obs.tell(observe.Event{Type: observe.EventDo, Kind: kind.name, Key: key, Context: ctx, Node: c.deployment(),
		Err: *err, Duration: time.Since(start)})
}
