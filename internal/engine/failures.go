package engine

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// A call whose context ends before Redis answers returns at once, while
// go-redis may go on dialling and retrying in the background (see bounded);
// the error it ends with comes too late for the caller. So that the caller
// still learns why Redis did not answer, each node notes the last failure
// its Redis client met, through a go-redis hook, until a command succeeds
// again; a call that gives up names the failure noted then, if any.

// failure is a failure a node's Redis client met.
type failure struct {
	err error
	at  time.Time
}

// noteFailures adds a hook to rdb that notes its failures on n (every
// failed dial, and every command or pipeline that failed for a reason other
// than the command itself, see unavailable) and forgets them when a command
// succeeds. The hook stays on rdb, which the Client does not own, after
// Close: it only stores an error.
func (n *node) noteFailures(rdb redis.UniversalClient) {
	rdb.AddHook(failureHook{n: n})
	// A Cluster or a Ring dials through the clients of its shards; those
	// made from now on get a hook for their dials.
	shard := func(c *redis.Client) { c.AddHook(failureHook{n: n, dialsOnly: true}) }
	switch c := rdb.(type) {
	case *redis.ClusterClient:
		c.OnNewNode(shard)
	case *redis.Ring:
		c.OnNewNode(shard)
	}
}

// failing returns the error of the last failure noted, unless a command
// succeeded since, and otherwise nil. The error says how long ago it was
// noted, and errors.Is and errors.As find the failure's own error in it.
func (n *node) failing() error { return n.failure.Load().describe() }

func (f *failure) describe() error {
	if f == nil {
		return nil
	}
	return fmt.Errorf("the last error from Redis, %v ago: %w", time.Since(f.at).Round(time.Millisecond), f.err)
}

// withFailures returns err, the error of a call on the lock named key that
// its context ended, naming also the failures its nodes are in, those that
// err does not name already. Observers are not told of them again: the
// calls that met them tell of their own failures.
func (e *Engine) withFailures(err error, key string) error {
	for _, n := range e.nodes {
		f := n.failure.Load()
		if f != nil && !errors.Is(err, f.err) {
			err = fmt.Errorf("%w; %w", err, n.errorOf("acquire", key, f.describe()))
		}
	}
	return err
}

// note notes the outcome of a dial, command or pipeline: a failure, or an
// answer (a reply, even an error reply about the command), which means that
// Redis serves again. A context that ended tells neither.
func (n *node) note(err error) {
	if err == nil { // the common case, without the allocation of errors.As
		if n.failure.Load() != nil {
			n.failure.Store(nil)
		}
		return
	}
	var reply redis.Error
	switch {
	case unavailable(err):
		n.failure.Store(&failure{err: err, at: time.Now()})
	case errors.As(err, &reply):
		if n.failure.Load() != nil {
			n.failure.Store(nil)
		}
	}
}

// unavailable reports whether err says that Redis could not serve a
// command: a network error or timeout, a pool out of connections, or a reply
// go-redis retries (LOADING, READONLY, CLUSTERDOWN, ...). A reply about the
// command itself (NOSCRIPT, WRONGTYPE, redis.Nil) and a caller's context
// ending are not.
func unavailable(err error) bool {
	if err == nil || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return false
	}
	var reply redis.Error
	if !errors.As(err, &reply) {
		return true
	}
	msg := strings.TrimPrefix(err.Error(), "ERR ")
	for _, prefix := range retriedReplies {
		if strings.HasPrefix(msg, prefix) {
			return true
		}
	}
	return false
}

// retriedReplies are the error replies that say a server cannot serve now.
var retriedReplies = [...]string{"LOADING ", "READONLY ", "MASTERDOWN ", "CLUSTERDOWN ", "TRYAGAIN ", "NOREPLICAS ", "max number of clients reached"}

// failureHook is the go-redis hook of noteFailures.
type failureHook struct {
	n         *node
	dialsOnly bool // on a shard of a Cluster or Ring, whose commands the hook on the whole sees
}

func (h failureHook) DialHook(next redis.DialHook) redis.DialHook {
	if next == nil { // a Cluster or Ring, which does not dial itself
		return nil
	}
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		conn, err := next(ctx, network, addr)
		if err != nil {
			h.n.note(err)
		}
		return conn, err
	}
}

func (h failureHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	if h.dialsOnly {
		return next
	}
	return func(ctx context.Context, cmd redis.Cmder) error {
		err := next(ctx, cmd)
		h.n.note(err)
		return err
	}
}

func (h failureHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	if h.dialsOnly {
		return next
	}
	return func(ctx context.Context, cmds []redis.Cmder) error {
		err := next(ctx, cmds)
		h.n.note(err)
		return err
	}
}
