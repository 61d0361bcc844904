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
type flight struct {
	ctx     context.Context // of the fetch: ends when its callers all left, or the Cache closes
	cancel  context.CancelFunc
	callers int // under group.mu

	done  chan struct{} // closed when value and err are set
	value []byte
	err   error
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
// stay small (the start of a flight and the leaving of one are functions
// of their own), so that fewer of them grow their stack before they block
// (with the larger frames, stack copying took 20% of a stampede's CPU and
// held up the load's read).
func (g *group) do(ctx context.Context, key string, a getArgs) ([]byte, error) {
	f := g.join(ctx, key, a)
	if f == nil {
		return nil, ErrClosed
	}
	select {
	case <-f.done:
		return f.value, f.err
	case <-ctx.Done():
		return g.leave(ctx, key, f)
	}
}

// join returns the flight of key, started now for a if none runs,
// counting the caller in; nil once the group's owner is closed.
func (g *group) join(ctx context.Context, key string, a getArgs) *flight {
	g.mu.Lock()
	defer g.mu.Unlock()
	f := g.flights[key]
	if f == nil {
		if f = g.start(ctx, key, a); f == nil {
			return nil
		}
		g.flights[key] = f
	}
	f.callers++
	return f
}

// start starts a flight of key for a; nil once the group's owner is
// closed. Under g.mu.
func (g *group) start(ctx context.Context, key string, a getArgs) *flight {
	f := &flight{done: make(chan struct{})}
	f.ctx, f.cancel = context.WithCancel(context.WithoutCancel(ctx))
	stop := context.AfterFunc(g.life, f.cancel)
	if !g.spawn(func() {
		f.value, f.err = g.fetch(f.ctx, key, a)
		g.mu.Lock()
		if g.flights[key] == f {
			delete(g.flights, key)
		}
		g.mu.Unlock()
		close(f.done)
		stop()
		f.cancel()
	}) {
		stop()
		f.cancel()
		return nil
	}
	return f
}

// leave is do for a caller whose ctx ended while f ran: it takes f's
// result if f ended just now, and otherwise leaves f, which is cancelled
// if nobody waits for it any more.
func (g *group) leave(ctx context.Context, key string, f *flight) ([]byte, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	select {
	case <-f.done: // it ended just now: take it
		return f.value, f.err
	default:
	}
	if f.callers--; f.callers == 0 && g.flights[key] == f {
		// Nobody waits for it: stop it, and let the next Get start anew.
		delete(g.flights, key)
		f.cancel()
	}
	return nil, fmt.Errorf("cachefill: get %q: %w", key, context.Cause(ctx))
}
