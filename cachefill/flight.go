package cachefill

import (
	"context"
	"fmt"
	"sync"
)

// group runs one fetch per key at a time in a process and hands its result
// to every Get that asked for the key meanwhile (singleflight). Unlike
// golang.org/x/sync/singleflight, each caller waits only as long as its own
// context lets it, and a fetch whose callers all gave up is cancelled.
// A fetch of key is fetch(ctx, key, a), for the arguments a of the Get
// that started it: a function given once, so that a Get that joins a fetch
// allocates no closure.
type group struct {
	life  context.Context        // ends when the Cache closes: every fetch is cancelled
	spawn func(work func()) bool // runs work in a goroutine its owner waits for; false once closed
	fetch func(ctx context.Context, key string, a getArgs) ([]byte, error)

	mu      sync.Mutex
	flights map[string]*flight
}

// flight is one fetch and the callers waiting for it.
//
// A caller watches its context's Done in a select with the flight's done,
// unless the caller that joined last with a context that can end did so
// with the same Done channel (a stampede's callers of one context): then it
// waits in a plain receive, on the channel of a set of waiters, which the
// caller that watches takes out of the flight with it when that Done
// closes. Waking a thousand goroutines blocked in a select on two channels
// they share makes each take both channels' locks one after the other: a
// typical stampede of bench/cmd/stampede got 0.1 to 0.7 ms faster without
// it (bench/results/stampede-waiters-2026-11-26.txt). Callers of contexts
// of their own, as a server's requests are, each watch their own, and
// allocate nothing.
type flight struct {
	ctx     context.Context // of the fetch: ends when its callers all left, or the Cache closes
	cancel  context.CancelFunc
	callers int // under group.mu

	done  chan struct{} // closed when value and err are set
	value []byte
	err   error

	// Under group.mu: the Done channel of the last caller that watches its
	// own, the set of waiters of that channel (nil until one joins it), and
	// every set; nil once the fetch ended.
	watched <-chan struct{}
	set     *waiters
	sets    []*waiters
}

// waiters are callers of a flight that wait for it in a plain receive,
// since another caller watches their contexts' Done channel, of.
type waiters struct {
	of   <-chan struct{}
	done chan struct{} // closed when the flight ended, or they left
	n    int           // under group.mu
	left bool          // they left; under group.mu, and set before done closes
}

func newGroup(life context.Context, spawn func(func()) bool, fetch func(ctx context.Context, key string, a getArgs) ([]byte, error)) *group {
	return &group{life: life, spawn: spawn, fetch: fetch, flights: make(map[string]*flight)}
}

// do returns the result of the fetch of key that is running, or of one
// for a, started now with a context that has ctx's values: whichever
// comes first, it or the end of ctx, which returns an error wrapping ctx's
// cause. It returns ErrClosed once the group's owner is closed.
//
// It is the path of every Get of a stampede, a thousand goroutines on a
// few cores: so its frame, and those of what it calls before it blocks,
// stay small (the start of a flight, and the watch and leaving of a
// context, are functions of their own), so that fewer of them grow their
// stack before they block (with the larger frames, stack copying took 20%
// of a stampede's CPU and held up the load's read).
func (g *group) do(ctx context.Context, key string, a getArgs) ([]byte, error) {
	f, w := g.join(ctx, key, a)
	switch {
	case f == nil:
		return nil, ErrClosed
	case w != nil:
		<-w.done
		if w.left {
			return nil, fmt.Errorf("cachefill: get %q: %w", key, context.Cause(ctx))
		}
	case ctx.Done() == nil:
		<-f.done
	default:
		return g.watch(ctx, key, f)
	}
	return f.value, f.err
}

// join returns the flight of key, started now for a if none runs, counting
// the caller in, and the set of waiters it is in, nil if it watches its
// own context; nils once the group's owner is closed.
func (g *group) join(ctx context.Context, key string, a getArgs) (*flight, *waiters) {
	g.mu.Lock()
	defer g.mu.Unlock()
	f := g.flights[key]
	if f == nil {
		if f = g.start(ctx, key, a); f == nil {
			return nil, nil
		}
		g.flights[key] = f
	}
	f.callers++
	done := ctx.Done()
	switch {
	case done == nil:
		return f, nil
	case done != f.watched:
		f.watched, f.set = done, nil
		return f, nil
	case f.set == nil:
		f.set = &waiters{of: done, done: make(chan struct{})}
		f.sets = append(f.sets, f.set)
	}
	f.set.n++
	return f, f.set
}

// start starts a flight of key for a; nil once the group's owner is
// closed. Under g.mu.
func (g *group) start(ctx context.Context, key string, a getArgs) *flight {
	f := &flight{done: make(chan struct{})}
	f.ctx, f.cancel = context.WithCancel(context.WithoutCancel(ctx))
	stop := context.AfterFunc(g.life, f.cancel)
	if !g.spawn(func() {
		v, err := g.fetch(f.ctx, key, a)
		g.end(key, f, v, err)
		stop()
		f.cancel()
	}) {
		stop()
		f.cancel()
		return nil
	}
	return f
}

// end hands the result of f's fetch to the callers that wait for it.
func (g *group) end(key string, f *flight, v []byte, err error) {
	g.mu.Lock()
	if g.flights[key] == f {
		delete(g.flights, key)
	}
	f.value, f.err = v, err
	sets := f.sets
	f.watched, f.set, f.sets = nil, nil, nil
	sets = stillWaiting(sets)
	g.mu.Unlock()
	close(f.done)
	for _, w := range sets {
		close(w.done)
	}
}

// stillWaiting returns sets without those that left, in place.
func stillWaiting(sets []*waiters) []*waiters {
	kept := sets[:0]
	for _, w := range sets {
		if !w.left {
			kept = append(kept, w)
		}
	}
	return kept
}

// watch waits for f, for a caller that watches its own ctx.
func (g *group) watch(ctx context.Context, key string, f *flight) ([]byte, error) {
	select {
	case <-f.done:
		return f.value, f.err
	case <-ctx.Done():
		return g.leave(ctx, key, f)
	}
}

// leave is do for a caller whose ctx ended while f ran: it takes f's
// result if f ended just now, and otherwise leaves f, with the waiters
// whose contexts' Done it watched; f is cancelled if nobody waits for it
// any more, so that the next Get starts anew.
func (g *group) leave(ctx context.Context, key string, f *flight) ([]byte, error) {
	g.mu.Lock()
	select {
	case <-f.done: // it ended just now: take it
		g.mu.Unlock()
		return f.value, f.err
	default:
	}
	done := ctx.Done()
	var gone []*waiters
	left := 1
	for _, w := range f.sets {
		if w.of == done && !w.left {
			w.left = true
			left += w.n
			gone = append(gone, w)
		}
	}
	if f.watched == done {
		f.watched, f.set = nil, nil
	}
	if f.callers -= left; f.callers == 0 && g.flights[key] == f {
		// Nobody waits for it: stop it, and let the next Get start anew.
		delete(g.flights, key)
		f.cancel()
	}
	g.mu.Unlock()
	for _, w := range gone {
		close(w.done)
	}
	return nil, fmt.Errorf("cachefill: get %q: %w", key, context.Cause(ctx))
}
