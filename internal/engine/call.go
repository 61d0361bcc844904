package engine

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync/atomic"

	"github.com/redis/go-redis/v9"
)

// call runs o and returns its reply, or returns when ctx is done, whichever
// comes first (see bounded). A context that can never be done takes the
// direct path: no goroutine, no allocation. If the caller gave up on an
// acquire that landed anyway, the lock is released.
func (e *Engine) call(ctx context.Context, o op) (reply, error) {
	if ctx.Done() == nil || e.quorum != nil { // a quorum bounds its own calls
		return e.run(ctx, o)
	}
	return e.callBounded(ctx, o)
}

// callBounded is call for a context that can end. It is a function of its
// own because its closures capture o: in call, that would move o to the
// heap on the direct path too.
func (e *Engine) callBounded(ctx context.Context, o op) (reply, error) {
	var late func(reply, error)
	if o.isAcquire() {
		late = func(r reply, err error) {
			if err != nil || r.code == acquired {
				e.releaseLate(o.acq)
			}
		}
	}
	return bounded(ctx, e, e.node, o.name, o.key(), func(ctx context.Context) (reply, error) {
		return e.run(ctx, o)
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
// fn runs in a goroutine owned by the Engine, with cancellation removed so
// it finishes and its outcome is known. If the caller gave up first, late
// (if not nil) gets that outcome.
func bounded[T any](ctx context.Context, e *Engine, n *node, op, key string, fn func(context.Context) (T, error), late func(T, error)) (T, error) {
	var zero T
	if ctx.Err() != nil {
		if failing := n.failing(); failing != nil {
			return zero, fmt.Errorf("dlock: %s %s: %w; %w", op, QuoteKey(key), contextError(ctx), failing)
		}
		return zero, fmt.Errorf("dlock: %s %s: %w", op, QuoteKey(key), contextError(ctx))
	}
	if !e.own.Add(1) {
		return zero, ErrClosed
	}
	p := &pending[T]{done: make(chan struct{})}
	go func() {
		defer e.own.Done()
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

// run sends o to Redis and waits for the answer: to the node (once per
// Cluster slot of a multi-key holding's keys), or to every node of a
// Redlock quorum.
func (e *Engine) run(ctx context.Context, o op) (reply, error) {
	switch {
	case e.quorum != nil:
		return e.quorum.run(ctx, o)
	case e.cluster && o.script != nil && o.script.perSlot:
		return e.runPerSlot(ctx, o)
	}
	return e.node.run(ctx, o)
}

// replyLost reports whether err leaves unknown whether a script ran: Redis
// failed to answer (a network error, a timeout). It is false when the
// context ended first, after which call itself cleans up, and when the
// command never left the client: no connection could be had.
func replyLost(err error) bool {
	var nodeErr *NodeError
	var noAnswer *noAnswerError
	var netErr *net.OpError
	var quorumErr *QuorumError
	switch {
	case !errors.As(err, &nodeErr), errors.As(err, &noAnswer), errors.As(err, &quorumErr):
		return false // a quorum cleans up after itself
	case refusedByACL(err):
		return false // the ACL refuses every copy of a call alike: none ran
	case errors.As(err, &netErr) && netErr.Op == "dial",
		errors.Is(err, redis.ErrClosed),
		errors.Is(err, redis.ErrPoolTimeout),
		errors.Is(err, redis.ErrPoolExhausted):
		return false // never sent
	}
	return true
}

// releaseInBackground runs releaseLate in a goroutine the Engine tracks.
func (e *Engine) releaseInBackground(acquire attempt) {
	e.own.Go(func() { e.releaseLate(acquire) })
}

// releaseLate releases a hold whose acquire may have landed although its
// caller did not get it (the reply was lost, or the caller's context ended
// first), a lost hold that Redis may still keep, or a fair waiter's place.
// It runs in a goroutine the Engine tracks. The release only deletes the
// key if it still holds the token, so it never touches anyone else's lock.
// Trying for longer than the hold lives is pointless, so its ttl bounds it.
// acquire is the acquire to undo.
//
// A record's acquire (AsRecord) is not undone: its caller was told that the
// outcome is unknown (ErrOutcomeUnknown), and a record that landed is what
// it asked for (a job's done record, say): deleting it would undo finished
// work. It expires with its ttl.
func (e *Engine) releaseLate(acquire attempt) {
	if acquire.record {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), acquire.ttl)
	defer cancel()
	if _, err := e.run(ctx, acquire.undo(false)); err != nil {
		e.logger.Warn("dlock: could not release a lock in the background; it expires by itself",
			"key", QuoteKey(acquire.keys[0]), "ttl", acquire.ttl, "error", err)
	}
}
