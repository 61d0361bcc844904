package engine

import (
	"context"
	"errors"
	"net"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/dlock-go/dlock/internal/batch"
	"github.com/dlock-go/dlock/internal/redisclient"
)

// How many calls of an Engine one node has in flight at once, each alone or
// as a pipeline of the calls that queued meanwhile. One lane leaves the
// round trip of the lone call idle while the next batch gathers; more keep
// the server and the client busy at once, and cut the batches smaller. A
// single deployment does best with four (8 goroutines: 12 to 16% less time
// per cycle than with two; 64 goroutines: the same); a Redlock's nodes,
// five servers on the same cores, with two (four lanes took about a fifth
// more time there). docs/benchmarks.md has the figures.
const (
	batchLanes       = 4 // a single deployment
	quorumBatchLanes = 2 // each node of a Redlock quorum
)

// A node sends its calls together when they come together (natural
// batching, internal/batch): its scripts, and a Redlock node's SET NX
// acquires. (An acquire WithReplicaAck is not batched: its WAIT must
// follow it on the same connection, and covers the writes sent before it
// there.) A call that finds a lane free is sent at once, alone, just as
// without batching, so a lone caller waits for nothing and no timer is
// involved; calls that find every lane busy queue, and when a lane frees
// the first of them sends the whole queue as one pipeline (a queue of one
// call goes alone). Redis answers a pipeline of n scripts in about the
// time of a few single ones, which is what makes many concurrent callers
// faster.
//
// No goroutine is started for it: a lane is run by the goroutine of the
// call that holds it, and each call of a batch keeps its own command,
// reply and error. A caller whose context ends while its call waits in the
// queue is answered by bounded, which runs the call in a goroutine of the
// Engine, as it runs a call in flight.

// sender sends the calls of a node to its deployment, alone or batched,
// and falls back to EVAL when the server lacks a script.
type sender struct {
	rdb   redis.UniversalClient
	batch *batch.Batcher[*batchCall] // the script calls of this Engine to the deployment
	calls sync.Pool                  // of *batchCall, so that a call allocates nothing of its own
	// Cluster: when the slot map was last reloaded, unix nanoseconds
	reloaded atomic.Int64
}

// newSender returns the sender to rdb, with lanes lanes.
func newSender(rdb redis.UniversalClient, lanes int) *sender {
	s := &sender{rdb: rdb}
	s.batch = batch.New(lanes, s.alone, s.pipeline)
	return s
}

// batchCall is one call on a node: an EVALSHA of an op's script, or a
// node's own commands (see node.acquireFenceless). Calls are pooled, so
// that a call allocates nothing of its own.
type batchCall struct {
	o   op
	cmd *redis.Cmd // the EVALSHA of o's script (or its EVAL); nil for cmds
	// cmds: commands that need no fallback, sent as they are; nil for an
	// EVALSHA
	cmds []redis.Cmder
}

// send runs o's script on the node, alone or in a batch, and returns its
// reply.
func (n *sender) send(ctx context.Context, o op) (any, error) {
	call := n.getCall()
	call.o, call.cmd = o, evalCmd(ctx, o, false)
	n.batch.Do(ctx, call)
	v, err := call.cmd.Result()
	n.putCall(call)
	return v, err
}

// sendCmds runs cmds on the node, alone (as one pipeline) or in a batch;
// each command keeps its own reply or error.
func (n *sender) sendCmds(ctx context.Context, cmds ...redis.Cmder) {
	call := n.getCall()
	call.cmds = append(call.cmds, cmds...)
	n.batch.Do(ctx, call)
	n.putCall(call)
}

func (n *sender) getCall() *batchCall {
	if call, ok := n.calls.Get().(*batchCall); ok {
		return call
	}
	return new(batchCall)
}

// putCall returns call to the pool, once its caller has read its replies.
func (n *sender) putCall(call *batchCall) {
	clear(call.cmds)
	*call = batchCall{cmds: call.cmds[:0]}
	n.calls.Put(call)
}

// alone sends call by itself: an EVALSHA as one command, commands as one
// pipeline.
func (n *sender) alone(ctx context.Context, call *batchCall) {
	if call.cmd != nil {
		n.eval(ctx, call)
		return
	}
	n.pipeline(ctx, []*batchCall{call})
}

// pipeline runs the calls' commands in one pipeline, each keeping its own
// reply or error, with what eval does for one EVALSHA: those that could not
// reach a Cluster's primary go again after a reload of the slot map, and
// those whose script the server lacks go again with EVAL.
func (n *sender) pipeline(ctx context.Context, calls []*batchCall) {
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
	n.resend(ctx, calls, redisclient.NoScript, true)
}

// resend sends again, in one pipeline, the calls whose error is one of
// which, with EVAL if withSource.
func (n *sender) resend(ctx context.Context, calls []*batchCall, which func(error) bool, withSource bool) {
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

// eval runs call's EVALSHA alone. When the server does not have the script
// (it was restarted, or someone ran SCRIPT FLUSH) it sends the source with
// EVAL, which also caches it for the next EVALSHA. call.cmd is the last
// command sent.
func (n *sender) eval(ctx context.Context, call *batchCall) {
	err := n.rdb.Process(ctx, call.cmd)
	if neverSent(err) && n.reloadSlots(ctx) {
		call.cmd = evalCmd(ctx, call.o, false) // to the slot's new primary
		err = n.rdb.Process(ctx, call.cmd)
	}
	if redisclient.NoScript(err) {
		call.cmd = evalCmd(ctx, call.o, true)
		_ = n.rdb.Process(ctx, call.cmd)
	}
}

// evalCmd returns the EVALSHA of o's script, or with withSource the EVAL of
// its source, built on o.argv: go-redis's EvalSha boxes the digest and
// every key anew each time, and copies the arguments into a new slice.
func evalCmd(ctx context.Context, o op, withSource bool) *redis.Cmd {
	argv := o.argv
	if withSource {
		argv = slices.Clone(argv) // o.argv may be in use by other nodes' calls
		argv[0], argv[1] = "eval", o.script.srcArg
	}
	cmd := redis.NewCmd(ctx, argv...)
	if len(o.keys) > 0 {
		cmd.SetFirstKeyPos(3) // a Cluster routes it by its first key
	}
	return cmd
}

// neverSent reports whether err is a failure to connect: the command never
// reached Redis, so it is safe to send again.
func neverSent(err error) bool {
	if err == nil {
		return false // without the allocation of errors.As
	}
	var netErr *net.OpError
	return errors.As(err, &netErr) && netErr.Op == "dial"
}

// reloadSlots reloads a Cluster's slot map, after a primary could not be
// reached: go-redis goes on sending a slot's commands to its old primary
// until it reloads the map by itself, which can take ten seconds after a
// failover, longer than many a lock's ttl. It reloads at most once per
// slotReloadInterval, and reports whether it did.
func (n *sender) reloadSlots(ctx context.Context) bool {
	cluster, ok := n.rdb.(*redis.ClusterClient)
	if !ok {
		return false
	}
	now := time.Now().UnixNano()
	last := n.reloaded.Load()
	if now-last < int64(slotReloadInterval) || !n.reloaded.CompareAndSwap(last, now) {
		return false
	}
	cluster.ReloadState(ctx)
	return true
}

// slotReloadInterval spaces the reloads of a Cluster's slot map.
const slotReloadInterval = 100 * time.Millisecond
