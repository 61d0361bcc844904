package dlock

import (
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/dlock-go/dlock/internal/batch"
	"github.com/dlock-go/dlock/internal/redisclient"
)

// node runs the lock scripts on one Redis deployment: a single server, a
// Sentinel-managed primary, or a Cluster. A plain lock uses one node.
type node struct {
	rdb  redis.UniversalClient
	name string
	ack  replicaAck // WithReplicaAck: acquires wait for replicas
	// fenceless: a node of a Redlock quorum, whose acquire hands out no
	// fence (the quorum hands one out at the first Lock.Fence) and so needs
	// no script: SET NX
	fenceless bool

	// "1" when PUBLISH counts every Client subscribed to a channel: not in
	// a Cluster, where it counts those of one node (see release.lua); boxed
	// once for the scripts' ARGV
	counted any

	obs   *observers                 // WithObserver: told of node errors; nil without one
	batch *batch.Batcher[*batchCall] // the script calls of this Client to this node (batch.go)
	calls sync.Pool                  // of *batchCall, so that a call allocates nothing of its own

	reloaded atomic.Int64            // Cluster: when the slot map was last reloaded, unix nanoseconds
	failure  atomic.Pointer[failure] // the last failure the Redis client met (see noteFailures)
}

func newNode(rdb redis.UniversalClient, ack replicaAck, lanes int) *node {
	n := &node{rdb: rdb, name: nodeName(rdb), ack: ack, counted: "1"}
	n.batch = newBatcher(n, lanes)
	if _, cluster := rdb.(*redis.ClusterClient); cluster {
		n.counted = ""
	}
	n.noteFailures(rdb)
	return n
}

// nodeName describes a deployment for error messages. It never includes
// credentials: only addresses.
func nodeName(rdb redis.UniversalClient) string {
	switch c := rdb.(type) {
	case *redis.Client:
		return c.Options().Addr
	case *redis.ClusterClient:
		return "cluster " + strings.Join(c.Options().Addrs, ",")
	case *redis.Ring:
		return "ring"
	default:
		return fmt.Sprintf("%T", rdb)
	}
}

// primaryFor returns the client of the server that holds key, whose
// connection a WAIT must share with the write it waits for.
func (n *node) primaryFor(ctx context.Context, key string) (*redis.Client, error) {
	switch c := n.rdb.(type) {
	case *redis.Client:
		return c, nil
	case *redis.ClusterClient:
		return c.MasterForKey(ctx, key)
	}
	return nil, fmt.Errorf("WithReplicaAck needs a *redis.Client or *redis.ClusterClient, not %T", n.rdb)
}

// eval runs call's EVALSHA alone. When the server does not have the script
// (it was restarted, or someone ran SCRIPT FLUSH) it sends the source with
// EVAL, which also caches it for the next EVALSHA. call.cmd is the last
// command sent.
func (n *node) eval(ctx context.Context, call *batchCall) {
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
func (n *node) reloadSlots(ctx context.Context) bool {
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

// fenceTag is what a Redlock holder stores with its fence (raise_fence.lua):
// the start of its token, enough to tell holders apart.
func fenceTag(token any) string {
	t, _ := token.(string)
	return t[:min(len(t), 8)]
}

// wrap returns err as a NodeError of this node, unless it is one already,
// and tells the Observers of it.
func (n *node) wrap(op, key string, err error) error {
	var nodeErr *NodeError
	if err == nil || errors.As(err, &nodeErr) {
		return err
	}
	e := n.errorOf(op, key, err)
	if n.obs != nil {
		n.obs.nodeError(e)
	}
	return e
}

// errorOf returns err as a NodeError of this node without telling the
// Observers: for a failure that the call which met it tells of itself, or
// will if it fails (a failure noted earlier, a node a Redlock round went on
// without).
func (n *node) errorOf(op, key string, err error) *NodeError {
	return &NodeError{Node: n.name, Op: op, Key: key, Err: err}
}
