package engine

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

	"github.com/dlock-go/dlock/internal/batch"
	"github.com/dlock-go/dlock/internal/ctxerr"
	"github.com/dlock-go/dlock/internal/redisclient"
	"github.com/dlock-go/dlock/internal/renew"
	"github.com/redis/go-redis/v9"
)

// node runs the lock scripts on one Redis deployment: a single server, a
// Sentinel-managed primary, or a Cluster. A plain lock uses one node.
type node struct {
	rdb  redis.UniversalClient
	name string
	ack  ReplicaAck // WithReplicaAck: acquires wait for replicas
	// fenceless: a node of a Redlock quorum, whose acquire hands out no
	// fence (the quorum hands one out at the first Lock.Fence) and so needs
	// no script: SET NX
	fenceless bool

	// "1" when PUBLISH counts every Client subscribed to a channel: not in
	// a Cluster, where it counts those of one node (see release.lua); boxed
	// once for the scripts' ARGV
	counted any

	hooks Hooks                      // told of node errors; nil without
	batch *batch.Batcher[*batchCall] // the script calls of this Engine to this node (batch.go)
	calls sync.Pool                  // of *batchCall, so that a call allocates nothing of its own

	reloaded atomic.Int64            // Cluster: when the slot map was last reloaded, unix nanoseconds
	failure  atomic.Pointer[failure] // the last failure the Redis client met (see noteFailures)
}

func newNode(rdb redis.UniversalClient, ack ReplicaAck, lanes int, hooks Hooks) *node {
	n := &node{rdb: rdb, name: nodeName(rdb), ack: ack, counted: "1", hooks: hooks}
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
	if n.hooks != nil {
		var noAnswer *noAnswerError
		if !errors.As(e.Err, &noAnswer) {
			n.hooks.NodeError(e)
		}
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

// refreshMany refreshes every lock, each for its own ttl, in one pipeline
// per server, and hands each server's results to deliver as they come: on a
// Cluster, one pipeline per primary, all at once, so a primary that is down
// or failing over delays the refreshes of its own locks only. deliver may
// be called from several goroutines at once; refreshMany returns when every
// call has returned.
func (n *node) refreshMany(ctx context.Context, locks []*renewedHold, deliver func([]*renewedHold, []renew.Result)) {
	cluster, ok := n.rdb.(*redis.ClusterClient)
	if !ok {
		res := make([]renew.Result, len(locks))
		n.refreshOn(ctx, n.rdb, locks, res)
		deliver(locks, res)
		return
	}
	byPrimary := map[*redis.Client][]*renewedHold{}
	for _, l := range locks {
		primary, err := cluster.MasterForKey(ctx, l.key)
		if err != nil {
			primary = nil // the ClusterClient finds it, below
		}
		byPrimary[primary] = append(byPrimary[primary], l)
	}
	var wg sync.WaitGroup
	for primary, group := range byPrimary {
		wg.Go(func() {
			res := make([]renew.Result, len(group))
			if primary != nil {
				n.refreshOn(ctx, primary, group, res)
			}
			if primary == nil || slices.ContainsFunc(res, func(r renew.Result) bool { return r.Err != nil }) {
				// Moved, failing over, or unknown: the ClusterClient follows
				// redirections, on a fresh slot map.
				n.reloadSlots(ctx)
				n.refreshOn(ctx, cluster, group, res)
			}
			deliver(group, res)
		})
	}
	wg.Wait()
}

// refreshOn refreshes locks in one pipeline of rdb into results. Scripts the
// server lost (NOSCRIPT) are sent again with EVAL, in a second pipeline.
func (n *node) refreshOn(ctx context.Context, rdb redis.Cmdable, locks []*renewedHold, results []renew.Result) {
	cmds := make([]*redis.Cmd, len(locks))
	pipe := rdb.Pipeline()
	for i, l := range locks {
		cmds[i] = pipe.EvalSha(ctx, l.kind.refresh.sha, l.kind.scriptKeys(l.keys), l.arg, l.renewal.Sent().Milliseconds())
	}
	_, _ = pipe.Exec(ctx) // each command keeps its own error
	var again []int
	for i, cmd := range cmds {
		if errors.Is(cmd.Err(), redis.ErrNoScript) {
			again = append(again, i)
		}
	}
	if len(again) > 0 {
		pipe = rdb.Pipeline()
		for _, i := range again {
			l := locks[i]
			cmds[i] = pipe.Eval(ctx, l.kind.refresh.src, l.kind.scriptKeys(l.keys), l.arg, l.renewal.Sent().Milliseconds())
		}
		_, _ = pipe.Exec(ctx)
	}
	for i, cmd := range cmds {
		v, err := cmd.Int64()
		results[i] = renew.Result{}
		switch {
		case err != nil:
			results[i].Err = n.wrap("refresh", locks[i].key, err)
		case v == ours:
			results[i].Held = true
		case v == releasedBefore:
			// A Release of the Lock whose answer did not come back
			// (ErrOutcomeUnknown) released it: it ended as released, not
			// lost; the renewer finds it ended.
			locks[i].lock().end(ErrReleased)
		case v != notOurs:
			results[i].Err = n.wrap("refresh", locks[i].key, fmt.Errorf("unexpected script reply %v", v))
		}
	}
}

// call runs o and returns its reply, or returns when ctx is done, whichever
// comes first (see bounded). A context that can never be done takes the
// direct path: no goroutine, no allocation. If the caller gave up on an
// acquire that landed anyway, the lock is released.
func (e *Engine) call(ctx context.Context, o op) (reply, error) {
	if ctx.Done() == nil || e.quorum != nil { // a quorum bounds its own calls
		return e.run(ctx, o)
	}
	return e.callBounded(ctx, o)
}

// callBounded is call for a context that can end. It is a function of its
// own because its closures capture o: in call, that would move o to the
// heap on the direct path too.
func (e *Engine) callBounded(ctx context.Context, o op) (reply, error) {
	var late func(reply, error)
	if o.isAcquire() {
		late = func(r reply, err error) {
			if err != nil || r.code == acquired {
				e.releaseLate(o.acq)
			}
		}
	}
	return bounded(ctx, e, e.node, o.name, o.key(), func(ctx context.Context) (reply, error) {
		return e.run(ctx, o)
	}, late)
}

// bounded runs fn, a call to the node n, and returns its result, or returns
// when ctx is done, whichever comes first. go-redis bounds a stalled read by
// its ReadTimeout and, unless ContextTimeoutEnabled is set, not by the
// context at all; bounded makes every operation of this package answer
// within the caller's deadline anyway. op and key name the operation in the
// error of a call that Redis did not answer in time, which also names the
// failure n is in, if any (see noteFailures).
//
// fn runs in a goroutine owned by the Engine, with cancellation removed so
// it finishes and its outcome is known. If the caller gave up first, late
// (if not nil) gets that outcome.
func bounded[T any](ctx context.Context, e *Engine, n *node, op, key string, fn func(context.Context) (T, error), late func(T, error)) (T, error) {
	var zero T
	if ctx.Err() != nil {
		if failing := n.failing(); failing != nil {
			return zero, fmt.Errorf("dlock: %s %s: %w; %w", op, QuoteKey(key), contextError(ctx), failing)
		}
		return zero, fmt.Errorf("dlock: %s %s: %w", op, QuoteKey(key), contextError(ctx))
	}
	if !e.own.Add(1) {
		return zero, ErrClosed
	}
	p := &pending[T]{done: make(chan struct{})}
	go func() {
		defer e.own.Done()
		v, err := fn(context.WithoutCancel(ctx))
		if !p.state.CompareAndSwap(waiting, delivered) {
			if late != nil {
				late(v, err)
			}
			return
		}
		p.value, p.err = v, err
		close(p.done)
	}()
	select {
	case <-p.done:
		return p.value, p.err
	case <-ctx.Done():
		if p.state.CompareAndSwap(waiting, abandoned) {
			return zero, n.wrap(op, key, &noAnswerError{err: contextError(ctx), failing: n.failing()})
		}
		<-p.done // the result came just now: take it
		return p.value, p.err
	}
}

// pending is the hand-over between bounded and its goroutine: whichever
// side moves state first decides whether the result is delivered or
// abandoned.
type pending[T any] struct {
	state atomic.Int32
	done  chan struct{}
	value T
	err   error
}

const (
	waiting int32 = iota
	delivered
	abandoned
)

// noAnswerError is the error of a call whose context ended before Redis
// answered. The call goes on in the background; an acquire that lands is
// released. errors.Is finds in it ErrOutcomeUnknown, the context's error
// and, if the node was failing (see node.failing), the failure's error.
type noAnswerError struct {
	err     error // the context's
	failing error // the node's failure, or nil
}

func (e *noAnswerError) Error() string {
	if e.failing == nil {
		return "no answer before the context ended: " + e.err.Error()
	}
	return "no answer before the context ended: " + e.err.Error() + "; " + e.failing.Error()
}

// Is reports whether target is ErrOutcomeUnknown: the call goes on, and
// what it does is not known yet.
func (e *noAnswerError) Is(target error) bool { return target == ErrOutcomeUnknown }

func (e *noAnswerError) Unwrap() []error {
	if e.failing == nil {
		return []error{e.err}
	}
	return []error{e.err, e.failing}
}

// contextError returns the error of a done context in which errors.Is finds
// both ctx.Err() and the cause given to a CancelCauseFunc, if any.
func contextError(ctx context.Context) error { return ctxerr.Of(ctx) }
