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

// runLoad calls load in a goroutine of the Cache and returns what it gave,
// or gives up on it when the load timeout passes, ctx ends or lost closes
// (the loader's lock is lost): the load's context ends then too, and
// whatever it returns later is dropped. A panic in load becomes an error.
func (c *Cache) runLoad(ctx context.Context, key string, lost <-chan struct{}, load func(context.Context) ([]byte, error)) loaded {
	ctx, cancel := context.WithTimeoutCause(ctx, c.opts.loadTimeout, errLoadTimeout)
	defer cancel()
	done := make(chan loaded, 1)
	start := time.Now()
	if !c.spawn(func() {
		defer func() {
			if p := recover(); p != nil {
				done <- loaded{err: fmt.Errorf("cachefill: load of %q panicked: %v\n%s", key, p, debug.Stack())}
			}
		}()
		v, err := load(ctx)
		done <- loaded{value: v, err: err, took: time.Since(start)}
	}) {
		return loaded{err: ErrClosed}
	}
	select {
	case l := <-done:
		return l
	case <-lost:
		return loaded{err: fmt.Errorf("cachefill: load of %q: %w", key, errLockLost)}
	case <-ctx.Done():
		select {
		case l := <-done: // it returned just now: take it
			return l
		default:
		}
		return loaded{err: fmt.Errorf("cachefill: load of %q: %w", key, context.Cause(ctx))}
	}
}

// errLockLost says that a loader lost its lock while it loaded.
var errLockLost = errors.New("the loader's lock was lost")
