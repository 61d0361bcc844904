package dlock

import (
	"context"
	"fmt"
	"sync/atomic"

	"github.com/dlock-go/dlock/internal/ctxerr"
)

// call runs o and returns its reply, or returns when ctx is done, whichever
// comes first (see bounded). A context that can never be done takes the
// direct path: no goroutine, no allocation. If the caller gave up on an
// acquire that landed anyway, the lock is released.
func (c *Client) call(ctx context.Context, o op) (reply, error) {
	if ctx.Done() == nil || c.quorum != nil { // a quorum bounds its own calls
		return c.run(ctx, o)
	}
	return c.callBounded(ctx, o)
}

// callBounded is call for a context that can end. It is a function of its
// own because its closures capture o: in call, that would move o to the
// heap on the direct path too.
func (c *Client) callBounded(ctx context.Context, o op) (reply, error) {
	var late func(reply, error)
	if o.isAcquire() {
		late = func(r reply, err error) {
			if err != nil || r.code == acquired {
				c.releaseLate(o.acq)
			}
		}
	}
	return bounded(ctx, c, c.node, o.name, o.key(), func(ctx context.Context) (reply, error) {
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
	if !c.own.Add(1) {
		return zero, ErrClosed
	}
	p := &pending[T]{done: make(chan struct{})}
	go func() {
		defer c.own.Done()
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
// released. errors.Is finds in it ErrOutcomeUnknown, the context's error
// and, if the node was failing (see node.failing), the failure's error.
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

// Is reports whether target is ErrOutcomeUnknown: the call goes on, and
// what it does is not known yet.
func (e *noAnswerError) Is(target error) bool { return target == ErrOutcomeUnknown }

func (e *noAnswerError) Unwrap() []error {
	if e.failing == nil {
		return []error{e.err}
	}
	return []error{e.err, e.failing}
}

// contextError returns the error of a done context in which errors.Is finds
// both ctx.Err() and the cause given to a CancelCauseFunc, if any.
func contextError(ctx context.Context) error { return ctxerr.Of(ctx) }
