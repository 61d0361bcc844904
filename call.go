package dlock

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync/atomic"
	"time"
)

// op is one script call on the node: what to run, on which lock.
type op struct {
	kind opKind
	// the lock key and its fence key (lockKeys); on a single deployment
	// also its queue of waiters and their leases (queueKeys)
	keys  []string
	token any           // the holder's token, boxed once for all the calls of a Lock
	ttl   time.Duration // acquire and refresh only
	fair  bool          // acquire: WithFair; the waiter takes its turn in the queue
	lease time.Duration // acquire: the waiter's lease in the queue; 0 to not join it
	// queued acquire and leave: the channel on which the waiter hears of a
	// handoff or of its turn to try, its subscriber's own; part of its
	// name in the queue
	notify string
	woken  bool        // queued acquire of a barging waiter: a release woke it
	fence  int64       // raise fence only
	after  *stragglers // Redlock calls of a Lock: its acquire's nodes still to answer
	quiet  bool        // release: publish nothing (see quorum.undo)
}

// undo returns the op that takes back what the acquire o may have done:
// release the lock if it holds o's token, and for a waiter in the queue
// also leave it (and pass the lock on).
func (o op) undo() op {
	u := op{kind: opRelease, keys: o.keys, token: o.token, ttl: o.ttl, notify: o.notify, after: o.after}
	if o.queued() {
		u.kind = opLeave
	}
	return u
}

// queued reports whether the acquire o goes through the queue of waiters
// (queue_acquire.lua): in fair mode always, else once the waiter joined it.
func (o op) queued() bool { return o.fair || o.lease > 0 }

// key is the lock key, for messages.
func (o op) key() string { return o.keys[0] }

type opKind uint8

const (
	opAcquire opKind = iota
	opRelease
	opRefresh
	opTTL
	opInspect
	opForceRelease
	opLeave      // a fair waiter gives up its place
	opRaiseFence // Redlock: store the quorum's fence where the lock is ours
)

var opNames = [...]string{
	opAcquire: "acquire", opRelease: "release", opRefresh: "refresh", opTTL: "ttl",
	opInspect: "inspect", opForceRelease: "force-release", opLeave: "leave",
	opRaiseFence: "acquire",
}

func (k opKind) String() string {
	if int(k) < len(opNames) {
		return opNames[k]
	}
	return "operation " + strconv.Itoa(int(k))
}

// reply is a script's answer: {code, value} (see the .lua files), and for
// inspect also the token and the fence.
type reply struct {
	code, value int64
	head        bool // fair acquire: the caller is first in the queue
	token       string
	fence       int64
	waiters     int64       // inspect: live fair-mode waiters
	fenceTag    string      // inspect: the tag stored with the fence, on a Redlock node (raise_fence.lua)
	raise       *fenceRaise // Redlock acquire: the fence is not on a quorum yet
	stragglers  *stragglers // Redlock acquire: nodes that had not answered yet
}

// run sends o to Redis and waits for the answer: to the node, or to every
// node of a Redlock quorum.
func (c *Client) run(ctx context.Context, o op) (reply, error) {
	if c.quorum != nil {
		return c.quorum.run(ctx, o)
	}
	return c.node.run(ctx, o)
}

// call runs o and returns its reply, or returns when ctx is done, whichever
// comes first (see bounded). A context that can never be done takes the
// direct path: no goroutine, no allocation. If the caller gave up on an
// acquire that landed anyway, the lock is released.
func (c *Client) call(ctx context.Context, o op) (reply, error) {
	if ctx.Done() == nil || c.quorum != nil { // a quorum bounds its own calls
		return c.run(ctx, o)
	}
	var late func(reply, error)
	if o.kind == opAcquire {
		late = func(r reply, err error) {
			if err != nil || r.code == acquired {
				c.releaseLate(o)
			}
		}
	}
	return bounded(ctx, c, c.node, o.kind.String(), o.key(), func(ctx context.Context) (reply, error) {
		return c.run(ctx, o)
	}, late)
}

// bounded runs fn, a call to the node n, and returns its result, or returns
// when ctx is done, whichever comes first. go-redis bounds a stalled read by
// its ReadTimeout and, unless ContextTimeoutEnabled is set, not by the
// context at all; bounded makes every operation of this package answer
// within the caller's deadline anyway. op and key name the operation in the
// error of a call that Redis did not answer in time, which also names the
// failure n is in, if any (see noteFailures).
//
// fn runs in a goroutine owned by the Client, with cancellation removed so
// it finishes and its outcome is known. If the caller gave up first, late
// (if not nil) gets that outcome.
func bounded[T any](ctx context.Context, c *Client, n *node, op, key string, fn func(context.Context) (T, error), late func(T, error)) (T, error) {
	var zero T
	if ctx.Err() != nil {
		if failing := n.failing(); failing != nil {
			return zero, fmt.Errorf("dlock: %s %s: %w; %w", op, quoteKey(key), contextError(ctx), failing)
		}
		return zero, fmt.Errorf("dlock: %s %s: %w", op, quoteKey(key), contextError(ctx))
	}
	if !c.track() {
		return zero, ErrClosed
	}
	p := &pending[T]{done: make(chan struct{})}
	go func() {
		defer c.wg.Done()
		v, err := fn(context.WithoutCancel(ctx))
		if !p.state.CompareAndSwap(waiting, delivered) {
			if late != nil {
				late(v, err)
			}
			return
		}
		p.value, p.err = v, err
		close(p.done)
	}()
	select {
	case <-p.done:
		return p.value, p.err
	case <-ctx.Done():
		if p.state.CompareAndSwap(waiting, abandoned) {
			return zero, n.wrap(op, key, &noAnswerError{err: contextError(ctx), failing: n.failing()})
		}
		<-p.done // the result came just now: take it
		return p.value, p.err
	}
}

// pending is the hand-over between bounded and its goroutine: whichever
// side moves state first decides whether the result is delivered or
// abandoned.
type pending[T any] struct {
	state atomic.Int32
	done  chan struct{}
	value T
	err   error
}

const (
	waiting int32 = iota
	delivered
	abandoned
)

// noAnswerError is the error of a call whose context ended before Redis
// answered. The call goes on in the background; an acquire that lands is
// released. errors.Is finds in it the context's error and, if the node was
// failing (see node.failing), the failure's error.
type noAnswerError struct {
	err     error // the context's
	failing error // the node's failure, or nil
}

func (e *noAnswerError) Error() string {
	if e.failing == nil {
		return "no answer before the context ended: " + e.err.Error()
	}
	return "no answer before the context ended: " + e.err.Error() + "; " + e.failing.Error()
}

func (e *noAnswerError) Unwrap() []error {
	if e.failing == nil {
		return []error{e.err}
	}
	return []error{e.err, e.failing}
}

// contextError returns the error of a done context in which errors.Is finds
// both ctx.Err() and the cause given to a CancelCauseFunc, if any.
func contextError(ctx context.Context) error {
	err, cause := ctx.Err(), context.Cause(ctx)
	if cause == nil || errors.Is(cause, err) {
		return cmp.Or(cause, err)
	}
	return fmt.Errorf("%w: %w", err, cause)
}
