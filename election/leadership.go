package election

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/dlock-go/dlock"
	"github.com/dlock-go/dlock/internal/door"
)

// Leadership is one term of leadership, from Campaign. It is safe for
// concurrent use.
//
// Leading is never a guarantee: the lease is renewed in the background, and
// a leader that cannot renew it in time (Redis is unreachable, the process
// was paused) loses it, which Done and Context tell as soon as this process
// can know. A leader that was paused learns it only when it runs again:
// pass Term to whatever the leader writes, and have it refuse terms lower
// than one it has seen.
type Leadership struct {
	lock  *dlock.Lock
	term  int64
	value string

	mu     sync.Mutex
	ctx    context.Context         // made by the first Context
	cancel context.CancelCauseFunc // of ctx
}

func newLeadership(lock *dlock.Lock, term int64, value string) *Leadership {
	return &Leadership{lock: lock, term: term, value: value}
}

// Term returns the term of this leadership: a number strictly larger than
// the term of every earlier leader of the election, also across a restart
// of Redis without persistence (it is the lock's fencing token; see
// dlock.Lock.Fence for what it assumes).
func (l *Leadership) Term() int64 { return l.term }

// Value returns the value this leader campaigned with.
func (l *Leadership) Value() string { return l.value }

// Done returns a channel that is closed when the leadership ends: when
// Resign gave it up, or when it was lost. Err then tells which.
func (l *Leadership) Done() <-chan struct{} { return l.lock.Done() }

// Err returns nil while this caller leads, and once Done is closed, why it
// stopped: an error wrapping ErrResigned after Resign, or one wrapping
// dlock.ErrLockLost when the lease was lost (taken over after it ran out,
// deleted, or not renewed in time, also because the dlock Client was
// closed).
func (l *Leadership) Err() error {
	err := l.lock.Err()
	if errors.Is(err, dlock.ErrReleased) { // only Resign releases the lock
		return fmt.Errorf("%w: term %d", ErrResigned, l.term)
	}
	return err
}

// Context returns a context that is cancelled when the leadership ends,
// with Err as its cause (see context.Cause): hand it to the work that only
// the leader may do.
func (l *Leadership) Context() context.Context {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.ctx != nil {
		return l.ctx
	}
	l.ctx, l.cancel = context.WithCancelCause(context.Background())
	select {
	case <-l.lock.Done():
		l.cancel(l.Err())
	default:
		// Ends with the lease: resigned, lost, or its Client closed.
		context.AfterFunc(door.Lifetime(l.lock), func() { l.cancel(l.Err()) })
	}
	return l.ctx
}

// ended cancels the context of Context, if there is one, at once: the
// function context.AfterFunc runs at the lock's end does it too, a little
// later.
func (l *Leadership) ended() {
	l.mu.Lock()
	cancel := l.cancel
	l.mu.Unlock()
	if cancel != nil {
		cancel(l.Err())
	}
}

// Resign gives the leadership up, and wakes a candidate at once. It returns
// nil if it did, also when an earlier Resign did; an error wrapping
// dlock.ErrLockLost when the seat was not this leader's any more (nobody
// was woken: the seat is taken, or free since its lease ran out); and an
// error of Redis otherwise.
//
// An error of Redis (unreachable, or no answer before ctx ended: then it
// wraps dlock.ErrOutcomeUnknown) leaves the outcome unknown: Redis may not
// have got the release, and this caller still leads, renewing its lease; or
// it got it and the reply was lost, and the next renewal finds the seat
// released: the leadership ends as resigned (Done, Err wrapping
// ErrResigned). Either way no other candidate leads before the release has
// taken effect. A seat that is not this leader's is never released. A
// release that go-redis sent again (it resends an unanswered command on
// another connection, and every copy runs) answers as its first copy did.
func (l *Leadership) Resign(ctx context.Context) error {
	if err := l.Err(); err != nil {
		if errors.Is(err, ErrResigned) {
			return nil
		}
		return err
	}
	if err := l.lock.Release(ctx); err != nil {
		if errors.Is(err, dlock.ErrNotHeld) {
			if errors.Is(l.Err(), ErrResigned) {
				return nil // a Resign at the same time released it
			}
			return fmt.Errorf("%w: %w", dlock.ErrLockLost, err)
		}
		return err
	}
	l.ended()
	return nil
}
