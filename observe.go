package dlock

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/dlock-go/dlock/internal/engine"
	"github.com/dlock-go/dlock/observe"
)

// WithObserver makes the Client tell o what it and its locks do (see
// package observe). Given more than once, every Observer given is told, in
// order. The default is no Observer, which costs nothing: no Event is
// built and nothing is allocated for it.
func WithObserver(o observe.Observer) Option {
	return func(c *clientConfig) {
		if o == nil {
			c.err = fmt.Errorf("%w: WithObserver(nil)", ErrInvalidOption)
			return
		}
		c.observers = append(c.observers, o)
	}
}

// The Client calls into this file only where an Observer is set (c.obs,
// n.obs, l.obs not nil), so that a Client without one builds no Event and
// allocates nothing for them.

// observers are the Observers of a Client; nil without any.
type observers struct {
	all   []observe.Observer
	calls []observe.CallObserver // those of all that are told when a call starts
	node  string                 // the Client's deployment, for the events (engine.Engine.Deployment)
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

// setNode names the deployment of e in the events; nil observers ignore
// it.
func (o *observers) setNode(e *engine.Engine) {
	if o != nil {
		o.node = e.Deployment()
	}
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
func (o *observers) start(ctx context.Context, t observe.EventType, kind *engine.Kind, key string, record bool) context.Context {
	for _, c := range o.calls {
		if next := c.StartCall(observe.Event{Type: t, Kind: kind.Name(), Key: key, Node: o.node, Context: ctx, Record: record}); next != nil {
			ctx = next
		}
	}
	return ctx
}

// NodeError tells of e, a failure of a node (engine.Hooks).
func (o *observers) NodeError(e *NodeError) {
	o.tell(observe.Event{Type: observe.EventNodeError, Key: e.Key, Node: e.Node, Op: e.Op, Err: e.Err})
}

// WaitStart tells that an obtain starts to wait (engine.Hooks).
func (o *observers) WaitStart(ctx context.Context, kind *engine.Kind, key string, record bool) {
	o.tell(observe.Event{Type: observe.EventWaitStart, Kind: kind.Name(), Key: key, Context: ctx, Node: o.node, Record: record})
}

// observedObtain is acquireHold with an Observer: it obtains a hold of kind
// on keys[0], waiting if wait (and not WithoutWait), as Obtain, Acquire,
// RLock, ... do, and tells how it went.
func (c *Client) observedObtain(ctx context.Context, kind *engine.Kind, keys []string, ttl time.Duration, limit any, wait bool, cfg obtainConfig) (*Lock, error) {
	start, key := time.Now(), keys[0]
	ctx = c.obs.start(ctx, observe.EventObtain, kind, key, cfg.Record)
	h, seen, err := c.e.Acquire(ctx, kind, keys, ttl, limit, wait, cfg.Config)
	lock := lockOf(h)
	e := observe.Event{Type: observe.EventObtain, Kind: kind.Name(), Key: key, Context: ctx, Node: c.obs.node, Err: err,
		Result: obtainResult(ctx, err), Attempts: seen.Attempts, Woken: seen.Woken, Handoff: seen.Handoff, Record: cfg.Record}
	end := time.Now()
	e.Duration = end.Sub(start)
	if !seen.WaitStart.IsZero() {
		e.Wait = end.Sub(seen.WaitStart)
		c.obs.tell(observe.Event{Type: observe.EventWaitEnd, Kind: e.Kind, Key: key, Context: ctx, Node: e.Node, Wait: e.Wait, Result: e.Result, Record: e.Record})
	}
	if seen.Handoff {
		c.obs.tell(observe.Event{Type: observe.EventHandoff, Kind: e.Kind, Key: key, Context: ctx, Node: e.Node, Record: e.Record})
	}
	if lock != nil && !lock.h.Renewed() {
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
	o        *observers // the Client's
	obtained time.Time
	ended    atomic.Bool // an event with Ended was told
	mu       sync.Mutex
	expiry   *time.Timer // without auto-renew: tells EventLost at Until
}

// Held starts the bookkeeping of the Lock of h, just obtained
// (engine.Hooks).
func (o *observers) Held(h *engine.Hold) {
	lockOf(h).obs = &lockObs{o: o, obtained: time.Now()}
}

// Ended tells how the Lock of h ended, for err (engine.Hooks).
func (o *observers) Ended(h *engine.Hold, err error) {
	if l := lockOf(h); l.obs != nil {
		l.observeEnd(err)
	}
}

// RecordEnded tells that the record of h ran out (engine.Hooks).
func (o *observers) RecordEnded(h *engine.Hold) {
	if l := lockOf(h); l.obs != nil {
		l.observeRecordEnd()
	}
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
	if l.h.Record() {
		l.observeRecordEnd()
		return
	}
	l.observeLost(fmt.Errorf("%w: %s: its validity ran out without a refresh or a release", ErrLockLost, engine.QuoteKey(l.Key())), observe.LostExpired)
}

// observeRecordEnd tells that the record l ran out, as its holder meant:
// an EventRelease that no call ends, unless an event ended l already.
func (l *Lock) observeRecordEnd() {
	if !l.obs.ended.CompareAndSwap(false, true) {
		return
	}
	l.obs.o.tell(observe.Event{Type: observe.EventRelease, Kind: l.h.Kind().Name(), Key: l.Key(), Node: l.obs.o.node, Record: true,
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
	l.obs.o.tell(observe.Event{Type: observe.EventLost, Kind: l.h.Kind().Name(), Key: l.Key(), Err: err, Reason: reason,
		Held: time.Since(l.obs.obtained), Ended: true, Record: l.h.Record()})
}

// startCall tells the CallObservers that a call of type t on l starts.
func (l *Lock) startCall(ctx context.Context, t observe.EventType) context.Context {
	return l.obs.o.start(ctx, t, l.h.Kind(), l.Key(), l.h.Record())
}

// observeRelease tells how a release that started at start ended.
func (l *Lock) observeRelease(ctx context.Context, start time.Time, err *error) {
	now := time.Now()
	l.obs.o.tell(observe.Event{Type: observe.EventRelease, Kind: l.h.Kind().Name(), Key: l.Key(), Context: ctx, Node: l.obs.o.node,
		Err: *err, Duration: now.Sub(start), Held: now.Sub(l.obs.obtained), Record: l.h.Record(),
		Ended: *err == nil && l.obs.ended.CompareAndSwap(false, true)})
}

// observeRefresh tells how a Lock.Refresh that started at start ended.
func (l *Lock) observeRefresh(ctx context.Context, start time.Time, err *error) {
	l.obs.o.tell(observe.Event{Type: observe.EventRefresh, Kind: l.h.Kind().Name(), Key: l.Key(), Context: ctx, Node: l.obs.o.node,
		Err: *err, Duration: time.Since(start), Record: l.h.Record()})
}

// Refreshed tells how an automatic refresh of the Lock of h went
// (engine.Hooks).
func (o *observers) Refreshed(h *engine.Hold, err error) {
	l := lockOf(h)
	if l.obs == nil {
		return
	}
	o.tell(observe.Event{Type: observe.EventRefresh, Kind: h.Kind().Name(), Key: h.Key(), Node: o.node, Auto: true, Err: err, Record: h.Record()})
}

// startDo tells the CallObservers that a Do on a hold of kind on key
// starts, and returns the context it runs under.
func (c *Client) startDo(ctx context.Context, kind *engine.Kind, key string) context.Context {
	return c.obs.start(ctx, observe.EventDo, kind, key, false)
}

// observeDo tells how a Do on a hold of kind on key, started at start,
// ended.
func (c *Client) observeDo(ctx context.Context, kind *engine.Kind, key string, start time.Time, err *error) {
	c.obs.tell(observe.Event{Type: observe.EventDo, Kind: kind.Name(), Key: key, Context: ctx, Node: c.obs.node,
		Err: *err, Duration: time.Since(start)})
}
