package dlock

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// node runs the lock scripts on one Redis deployment: a single server, a
// Sentinel-managed primary, or a Cluster. A plain lock uses one node.
type node struct {
	rdb  redis.UniversalClient
	name string
}

func newNode(rdb redis.UniversalClient) *node {
	return &node{rdb: rdb, name: nodeName(rdb)}
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

// eval runs s with EVALSHA. When the server does not have the script (it was
// restarted, or someone ran SCRIPT FLUSH) it sends the source with EVAL,
// which also caches it for the next EVALSHA.
func (n *node) eval(ctx context.Context, s *script, keys []string, args ...any) (any, error) {
	v, err := n.rdb.EvalSha(ctx, s.sha, keys, args...).Result()
	if errors.Is(err, redis.ErrNoScript) {
		v, err = n.rdb.Eval(ctx, s.src, keys, args...).Result()
	}
	return v, err
}

// Replies of acquire.lua.
const (
	acquired  = 1 // value is the fence
	held      = 0 // value is the holder's PTTL in milliseconds, -1 if none
	wrongType = 2 // the key is not a string
)

// The scripts' KEYS are the lock key and its fence key (lockKeys), whose
// name is also the channel a release is published on.

func (n *node) acquire(ctx context.Context, keys []string, token any, ttl time.Duration) (reply, error) {
	return n.exec(ctx, "acquire", acquireScript, keys, token, ttl.Milliseconds())
}

func (n *node) release(ctx context.Context, keys []string, token any) (reply, error) {
	return n.exec(ctx, "release", releaseScript, keys, token)
}

func (n *node) refresh(ctx context.Context, keys []string, token any, ttl time.Duration) (reply, error) {
	return n.exec(ctx, "refresh", refreshScript, keys, token, ttl.Milliseconds())
}

// ttl replies {1, pttl} when the lock is ours (pttl -1: no expiry), {0, 0}
// when it is not.
func (n *node) ttl(ctx context.Context, keys []string, token any) (reply, error) {
	return n.exec(ctx, "ttl", ttlScript, keys, token)
}

// inspect replies {state, pttl, token, fence} as inspect.lua says, state in
// code and pttl in value.
func (n *node) inspect(ctx context.Context, keys []string) (reply, error) {
	v, err := n.eval(ctx, inspectScript, keys)
	if err != nil {
		return reply{}, n.wrap("inspect", keys[0], err)
	}
	if a, ok := v.([]any); ok && len(a) == 4 {
		state, ok1 := a[0].(int64)
		token, ok2 := a[1].(string)
		pttl, ok3 := a[2].(int64)
		fence, ok4 := a[3].(string)
		if ok1 && ok2 && ok3 && ok4 {
			r := reply{code: state, value: pttl, token: token}
			if fence != "" {
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
	switch v := v.(type) {
	case int64:
		return reply{code: v}, nil
	case []any:
		if len(v) == 2 {
			code, ok1 := v[0].(int64)
			value, ok2 := v[1].(int64)
			if ok1 && ok2 {
				return reply{code: code, value: value}, nil
			}
		}
	}
	return reply{}, n.wrap(name, keys[0], fmt.Errorf("unexpected script reply %v", v))
}

// wrap returns err as a NodeError of this node, unless it is one already.
func (n *node) wrap(op, key string, err error) error {
	var nodeErr *NodeError
	if err == nil || errors.As(err, &nodeErr) {
		return err
	}
	return &NodeError{Node: n.name, Op: op, Key: key, Err: err}
}
