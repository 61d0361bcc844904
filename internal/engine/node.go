package engine

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/dlock-go/dlock/internal/redisclient"
	"github.com/redis/go-redis/v9"
)

// node runs the lock scripts on one Redis deployment: a single server, a
// Sentinel-managed primary, or a Cluster. A plain lock uses one node.
type node struct {
	*sender  // its Redis client, and how its calls are sent (batch.go)
	failures // the last failure its Redis client met (failures.go)
	name     string
	ack      ReplicaAck // WithReplicaAck: acquires wait for replicas
	// fenceless: a node of a Redlock quorum, whose acquire hands out no
	// fence (the quorum hands one out at the first Lock.Fence) and so needs
	// no script: SET NX
	fenceless bool

	// "1" when PUBLISH counts every Client subscribed to a channel: not in
	// a Cluster, where it counts those of one node (see release.lua); boxed
	// once for the scripts' ARGV
	counted any

	onError func(*NodeError) // told of node errors (Hooks.NodeError); nil without hooks
}

func newNode(rdb redis.UniversalClient, ack ReplicaAck, lanes int, onError func(*NodeError)) *node {
	n := &node{sender: newSender(rdb, lanes), name: nodeName(rdb), ack: ack, counted: "1", onError: onError}
	if _, cluster := rdb.(*redis.ClusterClient); cluster {
		n.counted = ""
	}
	n.watch(rdb)
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
	if n.onError != nil {
		var noAnswer *noAnswerError
		if !errors.As(e.Err, &noAnswer) {
			n.onError(e)
		}
	}
	return e
}

// errorOf returns err as a NodeError of this node without telling the
// Observers: for a failure that the call which met it tells of itself, or
// will if it fails (a failure noted earlier, a node a Redlock round went on
// without).
func (n *node) errorOf(op, key string, err error) *NodeError {
	return &NodeError{Node: n.name, Op: op, Key: key, Err: withACLHint(key, err)}
}

// acquire is how a node carries out an acquire: pipelined with a WAIT for
// WithReplicaAck, with SET NX on a Redlock node for a lock, else by its
// script.
func (n *node) acquire(ctx context.Context, o op) (reply, error) {
	switch {
	case n.ack.Replicas > 0:
		return n.acquireAcked(ctx, o)
	case n.fenceless && o.acq.kind.setNX && !o.acq.queued():
		return n.acquireFenceless(ctx, o)
	}
	return n.exec(ctx, o)
}

// acquireAcked runs the acquire o, pipelined with a WAIT on the same
// connection, so the WAIT covers its write (WithReplicaAck). An acquire that
// too few replicas acknowledged is released again.
func (n *node) acquireAcked(ctx context.Context, o op) (reply, error) {
	primary, err := n.primaryFor(ctx, o.key())
	if err != nil {
		return reply{}, n.wrap("acquire", o.key(), err)
	}
	var v any
	var acks int64
	for _, withSource := range []bool{false, true} {
		pipe := primary.Pipeline()
		eval := evalCmd(ctx, o, withSource)
		_ = pipe.Process(ctx, eval)
		wait := pipe.Do(ctx, "WAIT", n.ack.Replicas, n.ack.Timeout.Milliseconds())
		_, _ = pipe.Exec(ctx)
		v, err = eval.Result()
		if !redisclient.NoScript(err) {
			acks, _ = wait.Int64()
			break
		}
	}
	if err != nil {
		return reply{}, n.wrap("acquire", o.key(), outcomeUnknown(err))
	}
	r, err := n.decode(o, v)
	if err != nil || r.code != acquired || acks >= int64(n.ack.Replicas) {
		return r, err
	}
	if _, err := n.run(ctx, o.acq.undo(false)); err != nil {
		return reply{}, n.wrap("acquire", o.key(), fmt.Errorf("%w: %d of %d replicas within %v, and the release failed: %w", ErrNotReplicated, acks, n.ack.Replicas, n.ack.Timeout, err))
	}
	return reply{}, n.wrap("acquire", o.key(), fmt.Errorf("%w: %d of %d replicas within %v; released", ErrNotReplicated, acks, n.ack.Replicas, n.ack.Timeout))
}

// acquireFenceless replies as acquire does, with fence 0, for a node of a
// Redlock quorum: a plain SET NX PX takes the lock, pipelined with the
// upkeep of its side key, a fraction of the script's time on the server.
// Only if it did not is the key read, to tell a key of another type
// (WRONGTYPE), and our own token (go-redis resent the SET after a lost
// reply) from another holder's. A held reply does not tell the holder's PTTL
// (unknownTTL): asking would cost one more command, mostly for nothing, as a
// minority of nodes that have not seen the last release yet is common and
// does not stop a quorum.
func (n *node) acquireFenceless(ctx context.Context, o op) (reply, error) {
	key, token := o.key(), o.acq.arg
	// SetNX's reply is a bool, so a lock found held is no redis.Nil error,
	// which go-redis would examine at length for a retry. The side key is
	// how Scan finds the lock: created empty if it is missing (a fence
	// handed out later goes there), made to live at least as long as the
	// lock if it is there (a fence of an earlier holder, which it keeps).
	// On a lock held by another, the two change nothing that matters. Their
	// own errors are ignored: Redis before 7.0 has no PEXPIRE GT, and the
	// side key only helps Scan.
	// The commands are built here rather than with SetNX and Do, which box
	// the keys and the ttl once per command, in a slice each, and grow the
	// pipeline's slice one command at a time: a Redlock cycle does this on
	// every node. The keys come boxed from o's argv (see op.keyArgs).
	boxed := o.keyArgs()
	keyArg, sideArg := boxed[0], boxed[1]
	var ttlArg any = o.ttl.Milliseconds()
	args := [...]any{
		"set", keyArg, token, "px", ttlArg, "nx",
		"set", sideArg, "", "px", ttlArg, "nx",
		"pexpire", sideArg, ttlArg, "gt",
	}
	setCmd := redis.NewBoolCmd(ctx, args[0:6:6]...)
	n.sendCmds(ctx, setCmd, redis.NewBoolCmd(ctx, args[6:12:12]...), redis.NewCmd(ctx, args[12:16:16]...))
	set, err := setCmd.Result()
	switch {
	case err != nil:
		return reply{}, n.wrap("acquire", key, outcomeUnknown(err))
	case set:
		return reply{code: acquired}, nil
	}
	holder, err := n.rdb.Get(ctx, key).Result()
	switch {
	case errors.Is(err, redis.Nil): // gone since: free, but this attempt did not take it
		return reply{code: held, value: 0}, nil
	case err != nil && strings.HasPrefix(err.Error(), "WRONGTYPE"):
		return reply{code: wrongType}, nil
	case err != nil:
		return reply{}, n.wrap("acquire", key, err)
	case holder == token:
		return reply{code: acquired}, nil
	}
	return reply{code: held, value: unknownTTL}, nil
}

// run sends o to this node and waits for the answer.
func (n *node) run(ctx context.Context, o op) (reply, error) {
	if o.onNode != nil {
		return o.onNode(n, ctx, o)
	}
	return n.exec(ctx, o)
}

// exec runs o's script on this node and decodes its reply.
func (n *node) exec(ctx context.Context, o op) (reply, error) {
	if o.script == nil {
		return reply{}, n.wrap(o.name, o.key(), fmt.Errorf("no script: not an operation of this package"))
	}
	v, err := n.send(ctx, o)
	if err != nil {
		return reply{}, n.wrap(o.name, o.key(), outcomeUnknown(err))
	}
	return n.decode(o, v)
}

// decode reads the reply v of o's script.
func (n *node) decode(o op, v any) (reply, error) {
	decode := o.decode
	if decode == nil {
		decode = decodeStatus
	}
	if r, ok := decode(v); ok {
		return r, nil
	}
	return reply{}, n.wrap(o.name, o.key(), fmt.Errorf("unexpected script reply %v", v))
}

// ReplicaAck is what WithReplicaAck asks for; Replicas 0 means nothing.
type ReplicaAck struct {
	Replicas int
	Timeout  time.Duration
}

// shards returns the servers to SCAN: every primary of a Cluster, every
// shard of a Ring, or the one server.
func (n *node) shards(ctx context.Context) ([]redis.Cmdable, error) {
	var mu sync.Mutex
	var shards []redis.Cmdable
	collect := func(_ context.Context, shard *redis.Client) error {
		mu.Lock()
		defer mu.Unlock()
		shards = append(shards, shard)
		return nil
	}
	var err error
	switch c := n.rdb.(type) {
	case *redis.ClusterClient:
		err = c.ForEachMaster(ctx, collect)
	case *redis.Ring:
		err = c.ForEachShard(ctx, collect)
	default:
		shards = append(shards, n.rdb)
	}
	return shards, err
}
