package dlock

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/redis/go-redis/v9"

	"github.com/dlock-go/dlock/internal/redisclient"
)

// acquire is how a node carries out an acquire: pipelined with a WAIT for
// WithReplicaAck, with SET NX on a Redlock node for a lock, else by its
// script.
func (n *node) acquire(ctx context.Context, o op) (reply, error) {
	switch {
	case n.ack.replicas > 0:
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
		wait := pipe.Do(ctx, "WAIT", n.ack.replicas, n.ack.timeout.Milliseconds())
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
	if err != nil || r.code != acquired || acks >= int64(n.ack.replicas) {
		return r, err
	}
	if _, err := n.run(ctx, o.acq.undo(false)); err != nil {
		return reply{}, n.wrap("acquire", o.key(), fmt.Errorf("%w: %d of %d replicas within %v, and the release failed: %w", ErrNotReplicated, acks, n.ack.replicas, n.ack.timeout, err))
	}
	return reply{}, n.wrap("acquire", o.key(), fmt.Errorf("%w: %d of %d replicas within %v; released", ErrNotReplicated, acks, n.ack.replicas, n.ack.timeout))
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
