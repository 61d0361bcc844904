package dlock

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"iter"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/dlock-go/dlock/internal/slot"
)

// LockInfo is what Redis holds for a lock key at one moment, whoever holds
// it. Inspect and Scan return it; the CLI's status and list show it.
type LockInfo struct {
	Key string

	// Held reports whether the key exists as a lock. Keys taken by other
	// clients with a plain SET NX count too.
	Held bool

	// TTL is the lock's remaining time to live: 0 when it is not held, -1
	// when the key has no expiry.
	TTL time.Duration

	// Fingerprint tells holders apart without revealing their tokens: the
	// first 8 hex digits of the SHA-256 of the key's value, "" when it is
	// not held. A holder's own is Lock.Fingerprint. The token itself stays
	// with its holder, since whoever knows it can release the lock; a lock
	// whose holder is gone for good is cleared with ForceRelease.
	Fingerprint string

	value string // see Value

	// Fence is the last fencing token handed out for the key, or 0 when
	// that is no longer known (the lock was not taken by dlock, or its fence
	// expired with it). On a Redlock quorum, for a held lock, it is the
	// holder's fence once a quorum stores it (after the holder's first
	// Lock.Fence), and 0 until then.
	Fence int64

	// Waiters is how many callers wait for the lock in its queue (see
	// Obtain), counting those whose lease there still runs. On a Redlock
	// quorum waiters leave no trace in Redis and are not counted.
	Waiters int
}

// Inspect reports the state of the lock named key, whoever holds it, in one
// round trip. It changes nothing. A key of another type gives ErrWrongType.
func (c *Client) Inspect(ctx context.Context, key string) (LockInfo, error) {
	if err := c.checkKey(key); err != nil {
		return LockInfo{}, err
	}
	r, err := c.call(ctx, op{kind: opInspect, keys: queueKeys(key)})
	switch {
	case err != nil:
		return LockInfo{}, err
	case r.code == 2:
		return LockInfo{}, fmt.Errorf("%w: %s exists and is not a string, so it is no lock", ErrWrongType, quoteKey(key))
	}
	info := LockInfo{Key: key, Held: r.code == 1, Fingerprint: fingerprint(r.token), Fence: r.fence, Waiters: int(r.waiters), value: valueOf(r.token)}
	switch {
	case !info.Held:
	case r.value < 0:
		info.TTL = -1
	default:
		info.TTL = time.Duration(r.value) * time.Millisecond
	}
	return info, nil
}

// Fingerprint returns this holder's fingerprint: what LockInfo.Fingerprint
// shows, in Inspect, Scan and the CLI's status and list, while the lock is
// ours. It is no secret, unlike Token: log it, to match a holder to what an
// operator sees.
func (l *Lock) Fingerprint() string { return fingerprint(l.token) }

// fingerprint returns the first 8 hex digits of the SHA-256 of token, or ""
// for "". 32 bits tell the holders of a key apart, and reveal nothing of
// the token.
func fingerprint(token string) string {
	if token == "" {
		return ""
	}
	sum := sha256.Sum256([]byte(token))
	return hex.EncodeToString(sum[:4])
}

// ForceRelease deletes the lock named key whoever holds it, and tells
// waiters it is free. It is for operators clearing a lock whose holder is
// gone for good: a holder that is still working is not told, and from then
// on shares the resource with the next holder, until its next Refresh or
// Release returns ErrNotHeld. It reports whether there was a lock to
// delete, and leaves a key of another type alone (ErrWrongType).
func (c *Client) ForceRelease(ctx context.Context, key string) (bool, error) {
	if err := c.checkKey(key); err != nil {
		return false, err
	}
	r, err := c.call(ctx, op{kind: opForceRelease, keys: lockKeys(key)})
	switch {
	case err != nil:
		return false, err
	case r.code == 2:
		return false, fmt.Errorf("%w: %s exists and is not a string, so it is no lock", ErrWrongType, quoteKey(key))
	}
	return r.code == 1, nil
}

func (c *Client) checkKey(key string) error {
	if err := c.usable(); err != nil {
		return err
	}
	if key == "" {
		return fmt.Errorf("%w: empty key", ErrInvalidKey)
	}
	return nil
}

// scanCount is how many keys one SCAN call asks a server to look at.
const scanCount = 500

// Scan lists the locks held now whose names match pattern, on every primary
// of a Cluster, and on every node of a Redlock (each lock once). The pattern is a Redis glob, as for KEYS and SCAN MATCH:
// "*" for all, ? * [abc] [^a] [a-z], and a backslash to escape. Scan uses
// SCAN, never KEYS, so it does not block Redis, and like SCAN it may miss
// locks taken or released while it runs. It finds the locks taken by dlock
// (through their fence keys), not those of other clients.
//
// The iteration stops at the first error, which it yields.
func (c *Client) Scan(ctx context.Context, pattern string) iter.Seq2[LockInfo, error] {
	return func(yield func(LockInfo, error) bool) {
		if err := c.usable(); err != nil {
			yield(LockInfo{}, err)
			return
		}
		var seen map[string]bool // of a Redlock, whose nodes hold the same keys
		if len(c.nodes) > 1 {
			seen = map[string]bool{}
		}
		for _, n := range c.nodes {
			shards, err := bounded(ctx, c, n, "scan", pattern, n.shards, nil)
			if err != nil {
				yield(LockInfo{}, n.wrap("scan", pattern, err))
				return
			}
			for _, shard := range shards {
				if !c.scanShard(ctx, n, shard, pattern, seen, yield) {
					return
				}
			}
		}
	}
}

// scanShard scans one server; it returns false when the iteration must stop.
func (c *Client) scanShard(ctx context.Context, n *node, shard redis.Cmdable, pattern string, seen map[string]bool, yield func(LockInfo, error) bool) bool {
	var cursor uint64
	for {
		type page struct {
			keys []string
			next uint64
		}
		p, err := bounded(ctx, c, n, "scan", pattern, func(ctx context.Context) (page, error) {
			keys, next, err := shard.Scan(ctx, cursor, "dlock:"+fenceKind+"*", scanCount).Result()
			return page{keys, next}, err
		}, nil)
		if err != nil {
			return yield(LockInfo{}, n.wrap("scan", pattern, err))
		}
		for _, side := range p.keys {
			key, ok := lockKeyOf(fenceKind, side)
			if !ok || !matchPattern(pattern, key) || seen[key] {
				continue
			}
			if seen != nil {
				seen[key] = true
			}
			info, err := c.Inspect(ctx, key)
			if err != nil || !info.Held {
				if err == nil {
					continue // released or expired since
				}
				return yield(LockInfo{}, err)
			}
			if !yield(info, nil) {
				return false
			}
		}
		if p.next == 0 {
			return true
		}
		cursor = p.next
	}
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

// lockKeyOf returns the lock key whose side key of the given kind is side:
// the inverse of sideKey.
func lockKeyOf(kind, side string) (string, bool) {
	rest, ok := strings.CutPrefix(side, "dlock:"+kind)
	if !ok || rest == "" {
		return "", false
	}
	switch rest[0] {
	case ':': // the key has a hash tag
		key := rest[1:]
		return key, slot.HasTag(key)
	case '{': // the key is the tag
		key, ok := strings.CutSuffix(rest[1:], "}")
		return key, ok && key != "" && !strings.Contains(key, "}")
	case '#': // a slot tag, then the key
		if !strings.HasPrefix(rest, "#{") {
			return "", false
		}
		_, key, ok := strings.Cut(rest, "}")
		return key, ok && sideKey(kind, key) == side
	}
	return "", false
}
