package dlock

import (
	"context"
	"sync"
	"time"
)

// workerIdle is how long a worker of a quorum waits for its next call
// before it ends.
const workerIdle = 5 * time.Second

// workers run the calls of a quorum's rounds, one call to one node at a
// time. A worker waits workerIdle for its next call once it is done, so a
// busy Client starts no goroutine per node per round, and its workers keep
// the stacks they grew in go-redis rather than grow new ones each call (a
// tenth of the client's CPU time in a Redlock benchmark).
type workers struct {
	c     *Client
	calls chan nodeCall // unbuffered: a send succeeds when a worker waits
}

// nodeCall is one node's part of a round: it waits for after, if any,
// runs o on n, sends the vote as answer i, then marks itself done on wg.
type nodeCall struct {
	ctx     context.Context
	n       *node
	o       op
	i       int
	answers chan<- answer
	wg      *sync.WaitGroup
	after   *sync.WaitGroup // see stragglers
}

func (c nodeCall) run() {
	if c.after != nil {
		c.after.Wait()
	}
	r, err := c.n.run(c.ctx, c.o)
	c.answers <- answer{c.i, vote{r: r, err: err, answered: true}}
	c.wg.Done()
}

// do runs call on a waiting worker, or on a new one. The caller has
// registered call with the Client (trackN), so Close waits for it.
func (w *workers) do(call nodeCall) {
	select {
	case w.calls <- call:
		return
	default:
	}
	w.start(call)
}

// start runs call on a new worker. It is do's slow path, a function of its
// own so that do does not move call to the heap each time (the goroutines
// here capture it).
func (w *workers) start(call nodeCall) {
	if !w.c.track() {
		// Closing: no new worker, but the call runs to its end.
		go func() {
			defer w.c.wg.Done()
			call.run()
		}()
		return
	}
	go w.work(call)
}

// work runs call, then the calls handed to it, until it has waited
// workerIdle for one or the Client closes.
func (w *workers) work(call nodeCall) {
	defer w.c.wg.Done()
	idle := time.NewTimer(workerIdle)
	defer idle.Stop()
	for {
		call.run()
		w.c.wg.Done() // the call's registration
		idle.Reset(workerIdle)
		select {
		case call = <-w.calls:
		case <-idle.C:
			return
		case <-w.c.done:
			return
		}
	}
}
