package dlock

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"
)

// op is one script call on the node: what to run, on which lock.
type op struct {
	kind  opKind
	key   string
	token string
	ttl   time.Duration // acquire and refresh only
}

type opKind uint8

const (
	opAcquire opKind = iota
	opRelease
	opRefresh
	opTTL
)

var opNames = [...]string{opAcquire: "acquire", opRelease: "release", opRefresh: "refresh", opTTL: "ttl"}

func (k opKind) String() string { return opNames[k] }

// reply is a script's answer as {code, value}: see the .lua files.
type reply struct{ code, value int64 }

// run sends o to the node and waits for the answer.
func (c *Client) run(ctx context.Context, o op) (reply, error) {
	switch o.kind {
	case opAcquire:
		return c.node.acquire(ctx, o.key, o.token, o.ttl)
	case opRelease:
		return c.node.release(ctx, o.key, o.token)
	case opRefresh:
		return c.node.refresh(ctx, o.key, o.token, o.ttl)
	default:
		return c.node.ttl(ctx, o.key, o.token)
	}
}

// call runs o and returns its reply, or returns when ctx is done, whichever
// comes first. go-redis bounds a stalled read by its ReadTimeout and, unless
// ContextTimeoutEnabled is set, not by the context at all; call makes every
// operation of this package answer within the caller's deadline anyway.
//
// A context that can never be done takes the direct path: no goroutine, no
// allocation. Otherwise o runs in a goroutine owned by the Client, with
// cancellation removed so it finishes and its outcome is known. If the
// caller gave up first, an acquire that landed anyway is released.
func (c *Client) call(ctx context.Context, o op) (reply, error) {
	if ctx.Done() == nil {
		return c.run(ctx, o)
	}
	if ctx.Err() != nil {
		return reply{}, fmt.Errorf("dlock: %s %s: %w", o.kind, quoteKey(o.key), contextError(ctx))
	}
	if !c.track() {
		return reply{}, ErrClosed
	}
	p := &pending{done: make(chan struct{})}
	go func() {
		defer c.wg.Done()
		r, err := c.run(context.WithoutCancel(ctx), o)
		if !p.state.CompareAndSwap(waiting, delivered) {
			if o.kind == opAcquire && (err != nil || r.code == acquired) {
				c.releaseLate(o.key, o.token, o.ttl)
			}
			return
		}
		p.reply, p.err = r, err
		close(p.done)
	}()
	select {
	case <-p.done:
		return p.reply, p.err
	case <-ctx.Done():
		if p.state.CompareAndSwap(waiting, abandoned) {
			return reply{}, c.node.wrap(o.kind.String(), o.key, &noAnswerError{contextError(ctx)})
		}
		<-p.done // the reply came just now: take it
		return p.reply, p.err
	}
}

// pending is the hand-over between call and its goroutine: whichever side
// moves state first decides whether the reply is delivered or abandoned.
type pending struct {
	state atomic.Int32
	done  chan struct{}
	reply reply
	err   error
}

const (
	waiting int32 = iota
	delivered
	abandoned
)

// noAnswerError is the error of a call whose context ended before Redis
// answered. The call goes on in the background; an acquire that lands is
// released.
type noAnswerError struct{ err error }

func (e *noAnswerError) Error() string { return "no answer before the context ended: " + e.err.Error() }
func (e *noAnswerError) Unwrap() error { return e.err }

// contextError returns the error of a done context in which errors.Is finds
// both ctx.Err() and the cause given to a CancelCauseFunc, if any.
func contextError(ctx context.Context) error {
	err, cause := ctx.Err(), context.Cause(ctx)
	if cause == nil || errors.Is(cause, err) {
		return cmp.Or(cause, err)
	}
	return fmt.Errorf("%w: %w", err, cause)
}
