// Package owner keeps account of the goroutines an object starts, so that
// the object's Close can tell them to stop and wait until every one has
// returned.
package owner

import (
	"sync"
	"sync/atomic"
)

// Group is the goroutines of one owner, such as a dlock Client. Make it
// with New; it is safe for concurrent use.
type Group struct {
	mu     sync.Mutex // orders Add against Close
	closed atomic.Bool
	done   chan struct{}
	wg     sync.WaitGroup
}

// New returns an open Group.
func New() *Group {
	return &Group{done: make(chan struct{})}
}

// Add registers n goroutines with the group, unless it is closed; it
// reports whether it did. Each registered goroutine calls Done as it
// returns.
func (g *Group) Add(n int) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.closed.Load() {
		return false
	}
	g.wg.Add(n)
	return true
}

// Done marks one registered goroutine as returned.
func (g *Group) Done() { g.wg.Done() }

// Go runs f on a new goroutine of the group, unless the group is closed;
// it reports whether it did.
func (g *Group) Go(f func()) bool {
	if !g.Add(1) {
		return false
	}
	go func() {
		defer g.wg.Done()
		f()
	}()
	return true
}

// Closing is closed when Close is first called: goroutines that wait
// for more work stop then.
func (g *Group) Closing() <-chan struct{} { return g.done }

// Closed reports whether Close was called.
func (g *Group) Closed() bool { return g.closed.Load() }

// Close closes the group to new goroutines and closes Closing. It reports
// whether this call closed it (false after the first). It does not wait:
// Wait does, so an owner can stop in between what its goroutines may be
// blocked on.
func (g *Group) Close() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.closed.Swap(true) {
		return false
	}
	close(g.done)
	return true
}

// Wait waits until every goroutine registered with the group has returned.
func (g *Group) Wait() { g.wg.Wait() }

// Await runs fn on a new goroutine of g and returns its result, or returns
// once done is closed, whichever comes first; a result that is there by
// then is taken all the same. answered is false when done came first: fn
// goes on, and g's Wait waits for it. started is false when g is closed
// and fn did not run. It is how a package bounds a call to Redis by its
// caller's context when go-redis would wait for its read timeout.
func Await[T any](g *Group, done <-chan struct{}, fn func() T) (v T, answered, started bool) {
	result := make(chan T, 1)
	if !g.Go(func() { result <- fn() }) {
		return v, false, false
	}
	select {
	case v = <-result:
		return v, true, true
	case <-done:
		select {
		case v = <-result: // it answered just now: take it
			return v, true, true
		default:
			return v, false, true
		}
	}
}
