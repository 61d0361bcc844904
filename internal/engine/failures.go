package engine

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync/atomic"
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

// failures notes the last failure a node's Redis client met.
type failures struct {
	last atomic.Pointer[failure]
}

// watch adds a hook to rdb that notes its failures (every
// failed dial, and every command or pipeline that failed for a reason other
// than the command itself, see unavailable) and forgets them when a command
// succeeds. The hook stays on rdb, which the Client does not own, after
// Close: it only stores an error.
func (f *failures) watch(rdb redis.UniversalClient) {
	rdb.AddHook(failureHook{f: f})
	// A Cluster or a Ring dials through the clients of its shards; those
	// made from now on get a hook for their dials.
	shard := func(c *redis.Client) { c.AddHook(failureHook{f: f, dialsOnly: true}) }
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
func (f *failures) failing() error { return f.last.Load().describe() }

func (f *failure) describe() error {
	if f == nil {
		return nil
	}
	return fmt.Errorf("the last error from Redis, %v ago: %w", time.Since(f.at).Round(time.Millisecond), f.err)
}

// note notes the outcome of a dial, command or pipeline: a failure, or an
// answer (a reply, even an error reply about the command), which means that
// Redis serves again. A context that ended tells neither.
func (f *failures) note(err error) {
	if err == nil { // the common case, without the allocation of errors.As
		if f.last.Load() != nil {
			f.last.Store(nil)
		}
		return
	}
	var reply redis.Error
	switch {
	case unavailable(err):
		f.last.Store(&failure{err: err, at: time.Now()})
	case errors.As(err, &reply):
		if f.last.Load() != nil {
			f.last.Store(nil)
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

// failureHook is the go-redis hook of failures.watch.
type failureHook struct {
	f         *failures
	dialsOnly bool // on a shard of a Cluster or Ring, whose commands the hook on the whole sees
}

func (h failureHook) DialHook(next redis.DialHook) redis.DialHook {
	if next == nil { // a Cluster or Ring, which does not dial itself
		return nil
	}
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		conn, err := next(ctx, network, addr)
		if err != nil {
			h.f.note(err)
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
		h.f.note(err)
		return err
	}
}

func (h failureHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	if h.dialsOnly {
		return next
	}
	return func(ctx context.Context, cmds []redis.Cmder) error {
		err := next(ctx, cmds)
		h.f.note(err)
		return err
	}
}
