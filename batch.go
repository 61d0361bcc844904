package dlock

import (
	"context"
	"slices"
	"sync"

	"github.com/redis/go-redis/v9"
)

// batchLanes is how many calls of a Client one node has in flight at once, each alone or as a pipeline of the calls that queued meanwhile. One
// lane leaves the round trip of the lone call idle while the next batch
// gathers; two keep the server and the client busy at once on two cores;
// more only cut the batches smaller (docs/benchmarks.md has the figures).
const batchLanes = 2

// batcher sends a node's calls together when they come together (natural
// batching): its scripts, and a Redlock node's SET NX acquires. (An acquire
// WithReplicaAck is not batched: its WAIT must follow it on the same
// connection, and covers the writes sent before it there.) a call that finds a lane free is sent at once, alone,
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

// batchCall is one call on a node: an EVALSHA of an op's script, or a
// node's own commands (see node.acquireFenceless). Calls are pooled: one
// that queues allocates nothing of its own.
type batchCall struct {
	o   op
	cmd *redis.Cmd // the EVALSHA of o's script (or its EVAL); nil for cmds
	// cmds: commands that need no fallback, sent as they are; nil for an
	// EVALSHA
	cmds []redis.Cmder
	// lead: the calls it was woken to send, itself first; nil when it was
	// woken with its reply
	lead []*batchCall
	wake chan struct{} // buffered: the waker never waits
}

// send runs o's script on the node, alone or in a batch, and returns its
// reply.
func (n *node) send(ctx context.Context, o op) (any, error) {
	call := n.batch.get()
	call.o, call.cmd = o, evalCmd(ctx, o, false)
	n.do(ctx, call)
	v, err := call.cmd.Result()
	n.batch.put(call)
	return v, err
}

// sendCmds runs cmds on the node, alone (as one pipeline) or in a batch;
// each command keeps its own reply or error.
func (n *node) sendCmds(ctx context.Context, cmds ...redis.Cmder) {
	call := n.batch.get()
	call.cmds = append(call.cmds, cmds...)
	n.do(ctx, call)
	n.batch.put(call)
}

// do runs call at once if a lane is free, else in the batch it joins.
func (n *node) do(ctx context.Context, call *batchCall) {
	b := &n.batch
	b.mu.Lock()
	if b.busy < batchLanes {
		b.busy++
		b.mu.Unlock()
		if call.cmd != nil {
			n.eval(ctx, call)
		} else {
			n.pipeline(ctx, []*batchCall{call})
		}
		b.handOff()
		return
	}
	b.queue = append(b.queue, call)
	b.mu.Unlock()

	<-call.wake
	if call.lead != nil {
		n.sendBatch(ctx, call.lead)
		b.handOff()
	}
}

func (b *batcher) get() *batchCall {
	if call, ok := b.calls.Get().(*batchCall); ok {
		return call
	}
	return &batchCall{wake: make(chan struct{}, 1)}
}

// put returns call to the pool, once its caller has read its replies.
func (b *batcher) put(call *batchCall) {
	clear(call.cmds)
	*call = batchCall{wake: call.wake, cmds: call.cmds[:0]}
	b.calls.Put(call)
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
// reply or error, with what eval does for one EVALSHA: those that could not
// reach a Cluster's primary go again after a reload of the slot map, and
// those whose script the server lacks go again with EVAL.
func (n *node) pipeline(ctx context.Context, calls []*batchCall) {
	pipe := n.rdb.Pipeline()
	for _, call := range calls {
		if call.cmd != nil {
			_ = pipe.Process(ctx, call.cmd)
		} else {
			_ = pipe.BatchProcess(ctx, call.cmds...)
		}
	}
	_, _ = pipe.Exec(ctx) // each command keeps its own error
	if slices.ContainsFunc(calls, func(c *batchCall) bool { return c.cmd != nil && neverSent(c.cmd.Err()) }) && n.reloadSlots(ctx) {
		n.resend(ctx, calls, neverSent, false)
	}
	n.resend(ctx, calls, noScript, true)
}

// resend sends again, in one pipeline, the calls whose error is one of
// which, with EVAL if withSource.
func (n *node) resend(ctx context.Context, calls []*batchCall, which func(error) bool, withSource bool) {
	var pipe redis.Pipeliner
	for _, call := range calls {
		if call.cmd == nil || !which(call.cmd.Err()) {
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
