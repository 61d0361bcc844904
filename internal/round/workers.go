package round

import (
	"context"
	"sync"
	"time"
)

// workerIdle is how long a worker of a pool waits for its next call before
// it ends.
const workerIdle = 5 * time.Second

// call is one node's part of a round: it waits for after, if any, runs o
// on n, sends the vote as answer i, then marks itself done on wg.
//
// Workers run the calls, one call to one node at a time. A worker waits
// workerIdle for its next call once it is done, so a busy pool starts no
// goroutine per node per round, and its workers keep the stacks they grew
// in the Redis client rather than grow new ones each call (a tenth of the
// client's CPU time in a Redlock benchmark).
type call[N, O, R any] struct {
	ctx     context.Context
	n       N
	o       O
	i       int
	answers chan<- answer[R]
	wg      *sync.WaitGroup
	after   *sync.WaitGroup // see Stragglers
}

// carry carries c out.
func (p *Pool[N, O, R]) carry(c call[N, O, R]) {
	if c.after != nil {
		c.after.Wait()
	}
	r, err := p.cfg.Run(c.n, c.ctx, c.o)
	c.answers <- answer[R]{c.i, Vote[R]{R: r, Err: err, Answered: true}}
	c.wg.Done()
}

// do runs c on a waiting worker, or on a new one. The caller has
// registered c with the owner, so its Close waits for it.
func (p *Pool[N, O, R]) do(c call[N, O, R]) {
	select {
	case p.calls <- c:
		return
	default:
	}
	p.start(c)
}

// start runs c on a new worker. It is do's slow path, a function of its
// own so that do does not move c to the heap each time (the goroutines
// here capture it).
func (p *Pool[N, O, R]) start(c call[N, O, R]) {
	if !p.cfg.Owner.Add(1) {
		// Closing: no new worker, but the call runs to its end.
		go func() {
			p.carry(c)
			p.cfg.Owner.Done() // the call's registration
		}()
		return
	}
	go p.work(c)
}

// work runs c, then the calls handed to it, until it has waited workerIdle
// for one or the owner closes.
func (p *Pool[N, O, R]) work(c call[N, O, R]) {
	defer p.cfg.Owner.Done()
	idle := time.NewTimer(workerIdle)
	defer idle.Stop()
	for {
		p.carry(c)
		p.cfg.Owner.Done() // the call's registration
		idle.Reset(workerIdle)
		select {
		case c = <-p.calls:
		case <-idle.C:
			return
		case <-p.cfg.Owner.Closing():
			return
		}
	}
}
