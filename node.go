package dlock

import (
	"context"
	"errors"
	"fmt"
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

// status decodes the {status, value} pair most scripts reply with.
func status(v any) (code, value int64, err error) {
	pair, ok := v.([]any)
	if ok && len(pair) == 2 {
		code, ok1 := pair[0].(int64)
		value, ok2 := pair[1].(int64)
		if ok1 && ok2 {
			return code, value, nil
		}
	}
	return 0, 0, fmt.Errorf("dlock: unexpected script reply %v", v)
}

// flag decodes the 0 or 1 some scripts reply with.
func flag(v any) (bool, error) {
	switch v {
	case int64(1):
		return true, nil
	case int64(0):
		return false, nil
	}
	return false, fmt.Errorf("dlock: unexpected script reply %v", v)
}

// Replies of acquire.lua.
const (
	acquired  = 1 // value is the fence
	held      = 0 // value is the holder's PTTL in milliseconds, -1 if none
	wrongType = 2 // the key is not a string
)

func (n *node) acquire(ctx context.Context, key, token string, ttl time.Duration) (code, value int64, err error) {
	keys := []string{key, sideKey(fenceKind, key)}
	v, err := n.eval(ctx, acquireScript, keys, token, ttl.Milliseconds())
	if err == nil {
		code, value, err = status(v)
	}
	if err != nil {
		return 0, 0, n.wrap("acquire", key, err)
	}
	return code, value, nil
}

func (n *node) release(ctx context.Context, key, token string) (bool, error) {
	keys := []string{key, sideKey(channelKind, key)}
	v, err := n.eval(ctx, releaseScript, keys, token)
	if err != nil {
		return false, n.wrap("release", key, err)
	}
	ok, err := flag(v)
	return ok, n.wrap("release", key, err)
}

func (n *node) refresh(ctx context.Context, key, token string, ttl time.Duration) (bool, error) {
	v, err := n.eval(ctx, refreshScript, []string{key}, token, ttl.Milliseconds())
	if err != nil {
		return false, n.wrap("refresh", key, err)
	}
	ok, err := flag(v)
	return ok, n.wrap("refresh", key, err)
}

// ttl returns the lock's remaining time to live in milliseconds, -1 when the
// key has no expiry, and ok false when the lock is not ours.
func (n *node) ttl(ctx context.Context, key, token string) (pttl int64, ok bool, err error) {
	v, err := n.eval(ctx, ttlScript, []string{key}, token)
	if err == nil {
		var code int64
		code, pttl, err = status(v)
		ok = code == 1
	}
	if err != nil {
		return 0, false, n.wrap("ttl", key, err)
	}
	return pttl, ok, nil
}

func (n *node) wrap(op, key string, err error) error {
	if err == nil {
		return nil
	}
	return &NodeError{Node: n.name, Op: op, Key: key, Err: err}
}
