// Package batch sends calls together when they come together (natural
// batching), as one pipeline instead of one round trip each. It is dlock's
// machinery, not an API: the core batches its nodes' calls with it, and package
// stock its Reserve, Commit and Cancel.
//
// A call that finds a lane free runs at once, alone, just as without
// batching, so a lone caller waits for nothing and no timer is involved;
// calls that find every lane busy queue, and when a lane frees, the first
// of them takes the whole queue and runs it as one batch, in the order the
// calls came (a batch of one runs as a lone call does). Redis answers a
// pipeline of n scripts in far less than n round trips' time, which is what
// makes many concurrent callers faster.
//
// A Batcher starts no goroutine: a lane is run by the goroutine of the call
// that holds it, and the calls of a batch wait on their own channel. A
// batch's run function gives each call its own reply or error (each
// command of a go-redis pipeline keeps its own). A call returns when its
// batch has run: bounding the wait by a context is the caller's part, as it
// is for a call sent alone.
package batch

import (
	"context"
	"sync"
)

// Batcher runs calls of type T through its run function, alone or in
// batches. It is safe for concurrent use. The zero Batcher is not usable:
// make one with New.
type Batcher[T any] struct {
	lanes int
	alone func(ctx context.Context, call T)
	run   func(ctx context.Context, calls []T)

	mu    sync.Mutex
	busy  int          // lanes in use
	queue []*waiter[T] // waiting for a lane, in arrival order
	spare []*waiter[T] // the slice of a queue run already, for the next one
	calls []T          // the slice of calls of a batch run already, for the next one
	pool  sync.Pool    // of *waiter[T], so that a queued call allocates nothing of its own
}

// waiter is a call in the queue.
type waiter[T any] struct {
	call T
	// lead: the calls it was woken to run, itself first; nil when it was
	// woken because its batch has run
	lead []*waiter[T]
	wake chan struct{} // buffered: the waker never waits
}

// New returns a Batcher that runs at most lanes batches at once (at least
// one), each by calling run with its calls in the order they came; a call
// that finds a lane free runs by alone, or by run as a batch of one if
// alone is nil. run must not keep calls after it returns. One lane leaves
// the link idle while the next batch gathers; two keep the server and the
// client busy at once.
func New[T any](lanes int, alone func(ctx context.Context, call T), run func(ctx context.Context, calls []T)) *Batcher[T] {
	return &Batcher[T]{lanes: max(lanes, 1), alone: alone, run: run}
}

// Do runs call: at once and alone if a lane is free, else in the batch of
// the calls that queue with it. It returns once its batch has run. The
// batch runs with the context of its first call.
func (b *Batcher[T]) Do(ctx context.Context, call T) {
	b.mu.Lock()
	if b.busy < b.lanes {
		b.busy++
		b.mu.Unlock()
		if b.alone != nil {
			b.alone(ctx, call)
		} else {
			b.run(ctx, []T{call})
		}
		b.handOff()
		return
	}
	w := b.get()
	w.call = call
	b.queue = append(b.queue, w)
	b.mu.Unlock()

	<-w.wake
	if w.lead != nil {
		b.runBatch(ctx, w.lead)
		b.handOff()
	}
	b.put(w)
}

// handOff frees the caller's lane: the first queued call gets it, with the
// whole queue to run, or it becomes free if nothing waits. The queue is
// handed over at once, so that no other lane hands it over again.
func (b *Batcher[T]) handOff() {
	b.mu.Lock()
	if len(b.queue) == 0 {
		b.busy--
		b.mu.Unlock()
		return
	}
	waiters := b.queue
	b.queue, b.spare = b.spare, nil
	waiters[0].lead = waiters
	b.mu.Unlock()
	waiters[0].wake <- struct{}{}
}

// runBatch runs the calls of waiters as one batch, then wakes each but the
// first, the caller's own. A batch of one call runs by alone, as a call
// that finds a lane free does: a pipeline of one costs more than the call.
func (b *Batcher[T]) runBatch(ctx context.Context, waiters []*waiter[T]) {
	if len(waiters) == 1 && b.alone != nil {
		b.alone(ctx, waiters[0].call)
		b.recycle(waiters, nil)
		return
	}
	b.mu.Lock()
	calls := b.calls[:0]
	b.calls = nil
	b.mu.Unlock()
	for _, w := range waiters {
		calls = append(calls, w.call)
	}
	b.run(ctx, calls)
	for _, w := range waiters[1:] {
		w.wake <- struct{}{} // and never touched again: it is its caller's
	}
	b.recycle(waiters, calls)
}

// recycle keeps the slices of a batch that has run for the next ones.
func (b *Batcher[T]) recycle(waiters []*waiter[T], calls []T) {
	clear(waiters)
	clear(calls)
	b.mu.Lock()
	if b.spare == nil {
		b.spare = waiters[:0]
	}
	if b.calls == nil && calls != nil {
		b.calls = calls[:0]
	}
	b.mu.Unlock()
}

func (b *Batcher[T]) get() *waiter[T] {
	if w, ok := b.pool.Get().(*waiter[T]); ok {
		return w
	}
	return &waiter[T]{wake: make(chan struct{}, 1)}
}

// put returns w to the pool, once its call has run.
func (b *Batcher[T]) put(w *waiter[T]) {
	*w = waiter[T]{wake: w.wake}
	b.pool.Put(w)
}

// Queued returns how many calls wait for a lane now: for tests that need a
// call queued before they go on.
func (b *Batcher[T]) Queued() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.queue)
}

// Busy returns how many lanes are in use now: for tests that need every
// lane busy before they go on.
func (b *Batcher[T]) Busy() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.busy
}
