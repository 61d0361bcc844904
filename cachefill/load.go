package cachefill

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"time"
)

// errLoadTimeout is the cause of a load's context after the load timeout.
var errLoadTimeout = fmt.Errorf("the load timeout passed: %w", context.DeadlineExceeded)

// loaded is what one call of a load function gave.
type loaded struct {
	value []byte
	err   error
	took  time.Duration
}

// loading is one call of a load function, running in a goroutine of the
// Cache.
type loading struct {
	key    string
	ctx    context.Context // the load's: ends after the load timeout, with its Get's, or at drop
	cancel context.CancelCauseFunc
	done   chan loaded // gets what the load gave, once
	start  time.Time   // when it started
}

// startLoad calls load in a goroutine of the Cache, with a context that
// ends when ctx does, after the load timeout, or at drop. A panic in load
// becomes an error. Every call of a load function starts here, so it
// counts them.
func (c *Cache) startLoad(ctx context.Context, key string, load func(context.Context) ([]byte, error)) *loading {
	ctx, cancel := context.WithCancelCause(ctx)
	timed, cancelTimed := context.WithTimeoutCause(ctx, c.opts.loadTimeout, errLoadTimeout)
	l := &loading{key: key, ctx: timed, done: make(chan loaded, 1), start: time.Now()}
	l.cancel = func(cause error) { cancel(cause); cancelTimed() }
	if !c.spawn(func() {
		defer func() {
			if p := recover(); p != nil {
				l.done <- loaded{err: fmt.Errorf("cachefill: load of %q panicked: %v\n%s", key, p, debug.Stack())}
			}
		}()
		v, err := load(l.ctx)
		l.done <- loaded{value: v, err: err, took: time.Since(l.start)}
	}) {
		l.done <- loaded{err: ErrClosed}
		return l
	}
	c.loads.Add(1)
	return l
}

// wait returns what the load gave, or gives up on it when the load
// timeout passes, its Get's context ends or lost closes (the loader's lock
// is lost): the load's context ends then too, and whatever it returns
// later is dropped.
func (l *loading) wait(lost <-chan struct{}) loaded {
	defer l.cancel(context.Canceled)
	select {
	case r := <-l.done:
		return r
	case <-lost:
		return loaded{err: fmt.Errorf("cachefill: load of %q: %w", l.key, errLockLost)}
	case <-l.ctx.Done():
		select {
		case r := <-l.done: // it returned just now: take it
			return r
		default:
		}
		return loaded{err: fmt.Errorf("cachefill: load of %q: %w", l.key, context.Cause(l.ctx))}
	}
}

// drop gives up on a load that started before its loader had the lock,
// when the lock was not obtained: its context ends with cause, and what
// it returns is dropped.
func (l *loading) drop(cause error) { l.cancel(cause) }

// errLockLost says that a loader lost its lock while it loaded.
var errLockLost = errors.New("the loader's lock was lost")

// errNoLock is the cause of the context of a load that started with the
// request for its lock, which was not obtained.
var errNoLock = errors.New("cachefill: the loader's lock was not obtained")
