package dlock

import (
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
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

	reloaded atomic.Int64            // Cluster: when the slot map was last reloaded, unix nanoseconds
	failure  atomic.Pointer[failure] // the last failure the Redis client met (see noteFailures)
}

func newNode(rdb redis.UniversalClient, ack replicaAck) *node {
	n := &node{rdb: rdb, name: nodeName(rdb), ack: ack, counted: "1"}
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

// run sends o to this node and waits for the answer.
func (n *node) run(ctx context.Context, o op) (reply, error) {
	switch o.kind {
	case opAcquire:
		if n.ack.replicas > 0 {
			return n.acquireAcked(ctx, o)
		}
		if o.queued() {
			return n.queueAcquire(ctx, o)
		}
		if n.fenceless {
			return n.acquireFenceless(ctx, o)
		}
		return n.acquire(ctx, o.keys[:2], o.token, o.ttl)
	case opRelease:
		if o.quiet {
			return n.exec(ctx, "release", releaseScript, o.keys, o.token, "quiet")
		}
		return n.release(ctx, o.keys, o.token)
	case opLeave:
		return n.leave(ctx, o)
	case opRefresh:
		return n.refresh(ctx, o.keys[:2], o.token, o.ttl)
	case opTTL:
		return n.ttl(ctx, o.keys[:2], o.token)
	case opInspect:
		return n.inspect(ctx, o.keys)
	case opRaiseFence:
		return n.exec(ctx, "acquire", raiseFenceScript, o.keys[:2], o.token, o.fence, fenceTag(o.token))
	case opForceRelease:
		return n.forceRelease(ctx, o.keys)
	}
	return reply{}, n.wrap(o.kind.String(), o.key(), errors.New("not an operation of this package"))
}

// acquireAcked runs the acquire o, pipelined with a WAIT on the same
// connection, so the WAIT covers its write (WithReplicaAck). An acquire that
// too few replicas acknowledged is released again.
func (n *node) acquireAcked(ctx context.Context, o op) (reply, error) {
	s, keys, args := acquireScript, o.keys[:2], []any{o.token, o.ttl.Milliseconds()}
	if o.queued() {
		s, keys, args = queueAcquireScript, o.keys, o.queueArgs()
	}
	primary, err := n.primaryFor(ctx, o.key())
	if err != nil {
		return reply{}, n.wrap("acquire", o.key(), err)
	}
	var v any
	var acks int64
	for _, withSource := range []bool{false, true} {
		pipe := primary.Pipeline()
		var eval *redis.Cmd
		if withSource {
			eval = pipe.Eval(ctx, s.src, keys, args...)
		} else {
			eval = pipe.EvalSha(ctx, s.sha, keys, args...)
		}
		wait := pipe.Do(ctx, "WAIT", n.ack.replicas, n.ack.timeout.Milliseconds())
		_, _ = pipe.Exec(ctx)
		v, err = eval.Result()
		if !errors.Is(err, redis.ErrNoScript) {
			acks, _ = wait.Int64()
			break
		}
	}
	if err != nil {
		return reply{}, n.wrap("acquire", o.key(), err)
	}
	r, err := n.decode("acquire", o.key(), v)
	if err != nil || r.code != acquired || acks >= int64(n.ack.replicas) {
		return r, err
	}
	if _, err := n.run(ctx, o.undo()); err != nil {
		return reply{}, n.wrap("acquire", o.key(), fmt.Errorf("%w: %d of %d replicas within %v, and the release failed: %w", ErrNotReplicated, acks, n.ack.replicas, n.ack.timeout, err))
	}
	return reply{}, n.wrap("acquire", o.key(), fmt.Errorf("%w: %d of %d replicas within %v; released", ErrNotReplicated, acks, n.ack.replicas, n.ack.timeout))
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

// eval runs s with EVALSHA. When the server does not have the script (it was
// restarted, or someone ran SCRIPT FLUSH) it sends the source with EVAL,
// which also caches it for the next EVALSHA.
func (n *node) eval(ctx context.Context, s *script, keys []string, args ...any) (any, error) {
	v, err := n.rdb.EvalSha(ctx, s.sha, keys, args...).Result()
	if neverSent(err) && n.reloadSlots(ctx) {
		v, err = n.rdb.EvalSha(ctx, s.sha, keys, args...).Result() // the slot's new primary
	}
	if errors.Is(err, redis.ErrNoScript) {
		v, err = n.rdb.Eval(ctx, s.src, keys, args...).Result()
	}
	return v, err
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

// Replies of acquire.lua.
const (
	acquired  = 1 // value is the fence
	held      = 0 // value is the holder's PTTL in milliseconds, -1 if none
	wrongType = 2 // the key is not a string
)

// unknownTTL is the holder's PTTL in a held reply that does not tell it
// (a Redlock node's acquire, see acquireFenceless).
const unknownTTL = -3

// The scripts' KEYS are the lock key and its fence key (lockKeys), whose
// name is also the channel a release is published on.

func (n *node) acquire(ctx context.Context, keys []string, token any, ttl time.Duration) (reply, error) {
	return n.exec(ctx, "acquire", acquireScript, keys, token, ttl.Milliseconds())
}

// acquireFenceless replies as acquire does, with fence 0, for a node of a
// Redlock quorum: a plain SET NX PX takes the lock, pipelined with the
// upkeep of its side key, a fraction of the script's time on the server. Only if it did not is the key read, to tell a key of
// another type (WRONGTYPE), and our own token (go-redis resent the SET
// after a lost reply) from another holder's. A held reply does not tell the
// holder's PTTL (unknownTTL): asking would cost one more command, mostly
// for nothing, as a minority of nodes that have not seen the last release
// yet is common and does not stop a quorum.
func (n *node) acquireFenceless(ctx context.Context, o op) (reply, error) {
	key, side := o.key(), o.keys[1]
	// SetNX's reply is a bool, so a lock found held is no redis.Nil error,
	// which go-redis would examine at length for a retry. The side key is
	// how Scan finds the lock: created empty if it is missing (a fence
	// handed out later goes there), made to live at least as long as the
	// lock if it is there (a fence of an earlier holder, which it keeps).
	// On a lock held by another, the two change nothing that matters. Their
	// own errors are ignored: Redis before 7.0 has no PEXPIRE GT, and the
	// side key only helps Scan.
	pipe := n.rdb.Pipeline()
	setCmd := pipe.SetNX(ctx, key, o.token, o.ttl)
	pipe.SetNX(ctx, side, "", o.ttl)
	pipe.Do(ctx, "PEXPIRE", side, o.ttl.Milliseconds(), "GT")
	_, _ = pipe.Exec(ctx)
	set, err := setCmd.Result()
	switch {
	case err != nil:
		return reply{}, n.wrap("acquire", key, err)
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
	case holder == o.token:
		return reply{code: acquired}, nil
	}
	return reply{code: held, value: unknownTTL}, nil
}

// release releases the lock and passes it on to a waiter of its queue, if
// any (see release.lua).
func (n *node) release(ctx context.Context, keys []string, token any) (reply, error) {
	return n.exec(ctx, "release", releaseScript, keys, token, "", 0, fairLeaseMillis, "", n.counted)
}

// fenceTag is what a Redlock holder stores with its fence (raise_fence.lua):
// the start of its token, enough to tell holders apart.
func fenceTag(token any) string {
	t, _ := token.(string)
	return t[:min(len(t), 8)]
}

// fairLeaseMillis is FairLease for the scripts' ARGV, boxed once: never
// changed.
var fairLeaseMillis any = FairLease.Milliseconds()

// queueAcquire replies as queue_acquire.lua says; when the caller waits,
// head is 1 if it is first in the queue.
func (n *node) queueAcquire(ctx context.Context, o op) (reply, error) {
	return n.exec(ctx, "acquire", queueAcquireScript, o.keys, o.queueArgs()...)
}

// queueArgs returns the ARGV of queue_acquire.lua for the acquire o.
func (o op) queueArgs() []any {
	mode, woken := "", ""
	if !o.fair {
		mode = "barge"
	}
	if o.woken {
		woken = "1"
	}
	return []any{o.token, o.ttl.Milliseconds(), o.lease.Milliseconds(), o.notify, mode, woken}
}

// leave takes the waiter of the queued acquire o out of the queue, and
// releases the lock if it was handed over to it meanwhile.
func (n *node) leave(ctx context.Context, o op) (reply, error) {
	return n.exec(ctx, "release", releaseScript, o.keys, o.token, "leave", o.ttl.Milliseconds(), fairLeaseMillis, o.notify, n.counted)
}

func (n *node) refresh(ctx context.Context, keys []string, token any, ttl time.Duration) (reply, error) {
	return n.exec(ctx, "refresh", refreshScript, keys, token, ttl.Milliseconds())
}

// ttl replies {1, pttl} when the lock is ours (pttl -1: no expiry), {0, 0}
// when it is not.
func (n *node) ttl(ctx context.Context, keys []string, token any) (reply, error) {
	return n.exec(ctx, "ttl", ttlScript, keys, token)
}

// inspect replies {state, token, pttl, fence, waiters} as inspect.lua says,
// state in code and pttl in value. keys are queueKeys.
func (n *node) inspect(ctx context.Context, keys []string) (reply, error) {
	v, err := n.eval(ctx, inspectScript, keys)
	if err != nil {
		return reply{}, n.wrap("inspect", keys[0], err)
	}
	if a, ok := v.([]any); ok && len(a) == 5 {
		state, ok1 := a[0].(int64)
		token, ok2 := a[1].(string)
		pttl, ok3 := a[2].(int64)
		fence, ok4 := a[3].(string)
		waiters, ok5 := a[4].(int64)
		if ok1 && ok2 && ok3 && ok4 && ok5 {
			r := reply{code: state, value: pttl, token: token, waiters: waiters}
			if fence != "" {
				fence, r.fenceTag, _ = strings.Cut(fence, ":") // a Redlock holder's tag (raise_fence.lua)
				r.fence, err = strconv.ParseInt(fence, 10, 64)
			}
			if err == nil {
				return r, nil
			}
		}
	}
	return reply{}, n.wrap("inspect", keys[0], fmt.Errorf("unexpected script reply %v", v))
}

func (n *node) forceRelease(ctx context.Context, keys []string) (reply, error) {
	return n.exec(ctx, "force-release", forceReleaseScript, keys)
}

// exec runs a script and decodes its reply: an integer, or {code, value}.
func (n *node) exec(ctx context.Context, name string, s *script, keys []string, args ...any) (reply, error) {
	v, err := n.eval(ctx, s, keys, args...)
	if err != nil {
		return reply{}, n.wrap(name, keys[0], err)
	}
	return n.decode(name, keys[0], v)
}

// decode decodes a script's reply: an integer, or {code, value[, head]}.
func (n *node) decode(name, key string, v any) (reply, error) {
	switch v := v.(type) {
	case int64:
		return reply{code: v}, nil
	case []any:
		if len(v) == 2 || len(v) == 3 {
			code, ok1 := v[0].(int64)
			value, ok2 := v[1].(int64)
			var head int64
			ok3 := true
			if len(v) == 3 {
				head, ok3 = v[2].(int64)
			}
			if ok1 && ok2 && ok3 {
				return reply{code: code, value: value, head: head == 1}, nil
			}
		}
	}
	return reply{}, n.wrap(name, key, fmt.Errorf("unexpected script reply %v", v))
}

// wrap returns err as a NodeError of this node, unless it is one already.
func (n *node) wrap(op, key string, err error) error {
	var nodeErr *NodeError
	if err == nil || errors.As(err, &nodeErr) {
		return err
	}
	return &NodeError{Node: n.name, Op: op, Key: key, Err: err}
}

// refreshResult is the answer to one refresh of a batch: held, not held
// (err nil), or no answer (err set).
type refreshResult struct {
	held bool
	err  error
}

// refreshMany refreshes every lock, each for its own ttl, in one pipeline
// per server, and hands each server's results to deliver as they come: on a
// Cluster, one pipeline per primary, all at once, so a primary that is down
// or failing over delays the refreshes of its own locks only. deliver may
// be called from several goroutines at once; refreshMany returns when every
// call has returned.
func (n *node) refreshMany(ctx context.Context, locks []*Lock, deliver func([]*Lock, []refreshResult)) {
	cluster, ok := n.rdb.(*redis.ClusterClient)
	if !ok {
		res := make([]refreshResult, len(locks))
		n.refreshOn(ctx, n.rdb, locks, res)
		deliver(locks, res)
		return
	}
	byPrimary := map[*redis.Client][]*Lock{}
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
			res := make([]refreshResult, len(group))
			if primary != nil {
				n.refreshOn(ctx, primary, group, res)
			}
			if primary == nil || slices.ContainsFunc(res, func(r refreshResult) bool { return r.err != nil }) {
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
func (n *node) refreshOn(ctx context.Context, rdb redis.Cmdable, locks []*Lock, results []refreshResult) {
	cmds := make([]*redis.Cmd, len(locks))
	pipe := rdb.Pipeline()
	for i, l := range locks {
		cmds[i] = pipe.EvalSha(ctx, refreshScript.sha, l.keys[:2], l.arg, l.renew.sent().Milliseconds())
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
			cmds[i] = pipe.Eval(ctx, refreshScript.src, l.keys[:2], l.arg, l.renew.sent().Milliseconds())
		}
		_, _ = pipe.Exec(ctx)
	}
	for i, cmd := range cmds {
		v, err := cmd.Int64()
		results[i] = refreshResult{}
		switch {
		case err != nil:
			results[i].err = n.wrap("refresh", locks[i].key, err)
		case v == 1:
			results[i].held = true
		case v != 0:
			results[i].err = n.wrap("refresh", locks[i].key, fmt.Errorf("unexpected script reply %v", v))
		}
	}
}
