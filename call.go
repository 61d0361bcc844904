package dlock

import (
	"context"
	"fmt"
	"sync/atomic"
)

// call runs op and returns its result, or returns when ctx is done, whichever
// comes first. op and key name the operation in the error of a call that
// Redis did not answer in time. go-redis bounds a stalled read by its ReadTimeout and, unless
// ContextTimeoutEnabled is set, not by the context at all; call makes every
// operation of this package answer within the caller's deadline anyway.
//
// A context that can never be done takes the direct path, with no goroutine.
// Otherwise run runs in a goroutine owned by the Client, with cancellation
// removed so it finishes and its outcome is known. If the caller gave up
// before run finished, late (if not nil) is called with that outcome: an
// acquire that landed after its caller left must be released.
func call[T any](c *Client, ctx context.Context, op, key string, run func(context.Context) (T, error), late func(T, error)) (T, error) {
	if ctx.Done() == nil {
		return run(ctx)
	}
	var zero T
	if ctx.Err() != nil {
		return zero, contextError(ctx)
	}
	if !c.track() {
		return zero, ErrClosed
	}
	p := &pending[T]{done: make(chan struct{})}
	go func() {
		defer c.wg.Done()
		v, err := run(context.WithoutCancel(ctx))
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
			return zero, c.node.wrap(op, key, &noAnswerError{contextError(ctx)})
		}
		<-p.done // run finished just now: its result is on the way
		return p.value, p.err
	}
}

// pending is the hand-over between call and its goroutine: whichever side
// moves state first decides whether the result is delivered or abandoned.
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
// answered. The call goes on in the background, and its late function (if
// any) deals with the outcome.
type noAnswerError struct{ err error }

func (e *noAnswerError) Error() string { return "no answer before the context ended: " + e.err.Error() }
func (e *noAnswerError) Unwrap() error { return e.err }

// contextError returns the error of a done context, wrapping both ctx.Err()
// and its cause when they differ, so errors.Is finds either.
func contextError(ctx context.Context) error {
	err := ctx.Err()
	if cause := context.Cause(ctx); cause != nil && cause != err {
		return fmt.Errorf("%w: %w", err, cause)
	}
	return err
}
