package dlock

import (
	"context"
	"slices"
	"sync"

	"github.com/redis/go-redis/v9"
)

// batchLanes is how many script calls of a Client one node has in flight at
// once, each alone or as a pipeline of the calls that queued meanwhile. One
// lane leaves the round trip of the lone call idle while the next batch
// gathers; two keep the server and the client busy at once on two cores;
// more only cut the batches smaller (docs/benchmarks.md has the figures).
const batchLanes = 2

// batcher sends a node's script calls together when they come together
// (natural batching): a call that finds a lane free is sent at once, alone,
// just as without batching, so a lone caller waits for nothing and no timer
// is involved; calls that find every lane busy queue, and when a lane frees
// the first of them takes the whole queue and sends it as one pipeline.
// Redis answers a pipeline of n scripts in about the time of a few single
// ones, which is what makes many concurrent callers faster.
//
// The batcher starts no goroutine: a lane is run by the goroutine of the
// call that holds it, and the calls of a batch wait on their own channel,
// each with its own command, reply and error. A caller whose context ends
// while its call waits in the queue is answered by bounded, which runs
// the call in a goroutine of the Client, as it runs a call in flight.
type batcher struct {
	mu    sync.Mutex
	busy  int          // lanes in use
	queue []*batchCall // waiting for a lane, in arrival order
	spare []*batchCall // the slice of a queue sent already, for the next one
	calls sync.Pool    // of *batchCall, so that a queued call allocates nothing of its own
}

// batchCall is one call queued in a batcher.
type batchCall struct {
	o   op
	cmd *redis.Cmd
	// lead: the calls it was woken to send, itself first; nil when it was
	// woken with its reply
	lead []*batchCall
	wake chan struct{} // buffered: the waker never waits
}

// send runs o's script on the node, alone or in a batch, and returns its
// reply.
func (n *node) send(ctx context.Context, o op) (any, error) {
	b := &n.batch
	b.mu.Lock()
	if b.busy < batchLanes {
		b.busy++
		b.mu.Unlock()
		v, err := n.eval(ctx, o)
		b.handOff()
		return v, err
	}
	call, _ := b.calls.Get().(*batchCall)
	if call == nil {
		call = &batchCall{wake: make(chan struct{}, 1)}
	}
	call.o, call.cmd = o, evalCmd(ctx, o, false)
	b.queue = append(b.queue, call)
	b.mu.Unlock()

	<-call.wake
	if call.lead != nil {
		n.sendBatch(ctx, call.lead)
		b.handOff()
	}
	v, err := call.cmd.Result()
	*call = batchCall{wake: call.wake}
	b.calls.Put(call)
	return v, err
}

// handOff frees the caller's lane: the first queued call gets it, with the
// whole queue to send, or it becomes free if nothing waits. The queue is
// handed over at once, so that no other lane hands it over again.
func (b *batcher) handOff() {
	b.mu.Lock()
	if len(b.queue) == 0 {
		b.busy--
		b.mu.Unlock()
		return
	}
	calls := b.queue
	b.queue, b.spare = b.spare, nil
	calls[0].lead = calls
	b.mu.Unlock()
	calls[0].wake <- struct{}{}
}

// sendBatch sends calls as one pipeline, and wakes each but the first, its
// own, with its reply.
func (n *node) sendBatch(ctx context.Context, calls []*batchCall) {
	n.pipeline(ctx, calls)
	for _, call := range calls[1:] {
		call.wake <- struct{}{} // and never touched again: it is its caller's
	}
	clear(calls)
	b := &n.batch
	b.mu.Lock()
	if b.spare == nil {
		b.spare = calls[:0]
	}
	b.mu.Unlock()
}

// pipeline runs the calls' commands in one pipeline, each keeping its own
// reply or error, with what eval does for one: the calls that could not
// reach a Cluster's primary go again after a reload of the slot map, and
// those whose script the server lacks go again with EVAL.
func (n *node) pipeline(ctx context.Context, calls []*batchCall) {
	pipe := n.rdb.Pipeline()
	for _, call := range calls {
		_ = pipe.Process(ctx, call.cmd)
	}
	_, _ = pipe.Exec(ctx) // each command keeps its own error
	if slices.ContainsFunc(calls, func(c *batchCall) bool { return neverSent(c.cmd.Err()) }) && n.reloadSlots(ctx) {
		n.resend(ctx, calls, neverSent, false)
	}
	n.resend(ctx, calls, noScript, true)
}

// resend sends again, in one pipeline, the calls whose error is one of
// which, with EVAL if withSource.
func (n *node) resend(ctx context.Context, calls []*batchCall, which func(error) bool, withSource bool) {
	var pipe redis.Pipeliner
	for _, call := range calls {
		if !which(call.cmd.Err()) {
			continue
		}
		if pipe == nil {
			pipe = n.rdb.Pipeline()
		}
		call.cmd = evalCmd(ctx, call.o, withSource)
		_ = pipe.Process(ctx, call.cmd)
	}
	if pipe != nil {
		_, _ = pipe.Exec(ctx)
	}
}
