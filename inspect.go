package dlock

import (
	"context"
	"crypto/sha1" //nolint:gosec // matches Lua's redis.sha1hex; see sha1Hex
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"iter"
	"strconv"
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

	// seen is what Redis held, for ForceReleaseHolder: the SHA-1 (hex) of
	// the lock's token, or of the names (class and token) of a shared
	// hold's holders. Never the tokens themselves, which release the lock:
	// a LockInfo may be logged.
	seen []string

	// HolderName names the holder, as its Client's WithHolderName did
	// (by default the host name, pid and program): "" when it is not held,
	// or was taken without one (by another client, or an older dlock).
	HolderName string

	// Since is when the holder obtained the lock, by the server's clock:
	// its fence tells it, being the server's time in microseconds at the
	// acquire. Zero when the fence is not known.
	Since time.Time

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

	// Kind is what the key holds: "lock" (Obtain), "semaphore"
	// (Client.Semaphore) or "rwmutex" (Client.RWMutex); "" when it is not
	// held.
	Kind string

	// Limit is a semaphore's limit, as its permits were taken with; 0 for
	// the other kinds.
	Limit int

	// Holders are the holders of a semaphore or an RW lock, one for each
	// permit or read hold, or the writer (TTL, Fingerprint and Fence above
	// are then those of the holding that expires first, and the largest
	// fence handed out). nil for a lock, which has one holder.
	Holders []HolderInfo
}

// HolderInfo is one holder of a semaphore or an RW lock, in LockInfo.
type HolderInfo struct {
	// Mode is "permit" for a semaphore, "read" or "write" for an RW lock.
	Mode string

	// Fingerprint tells the holder apart, as LockInfo.Fingerprint does for
	// a lock; Lock.Fingerprint is the holder's own.
	Fingerprint string

	// TTL is its holding's remaining time to live.
	TTL time.Duration

	// Fence is the fencing token its acquire got; 0 on a Redlock quorum,
	// where only the holder's first Lock.Fence hands one out.
	Fence int64

	// HolderName and Since are as in LockInfo.
	HolderName string
	Since      time.Time

	value string // see Value
}

// Value returns the value the holder's hold carries (see WithValue), or "".
func (h HolderInfo) Value() string { return h.value }

// Inspect reports the state of the lock, semaphore or RW lock named key,
// whoever holds it, in one round trip. It changes nothing. A key of another
// type gives ErrWrongType.
func (c *Client) Inspect(ctx context.Context, key string) (LockInfo, error) {
	if err := c.checkKey(key); err != nil {
		return LockInfo{}, err
	}
	r, err := c.call(ctx, inspectOp(key))
	switch {
	case err != nil:
		return LockInfo{}, err
	case r.code == stateWrongType:
		return LockInfo{}, fmt.Errorf("%w: %s exists and is no lock, semaphore or RW lock", ErrWrongType, quoteKey(key))
	}
	info := LockInfo{Key: key, Held: r.code == stateHeld, Fingerprint: fingerprint(r.token), Fence: r.fence, Waiters: int(r.waiters)}
	if info.Held && r.holders == nil {
		info.seen = []string{sha1Hex(r.token)}
	}
	if info.Held {
		info.HolderName, info.value = splitToken(r.token)
		info.Since = sinceFence(r.fence)
		info.TTL = pttlDuration(r.value)
		info.Kind, info.Limit = "lock", int(r.limit)
		if r.holders != nil {
			info.Kind = r.kind
			info.Holders = make([]HolderInfo, len(r.holders))
			for i, h := range r.holders {
				name, value := splitToken(h.token)
				info.Holders[i] = HolderInfo{Mode: h.mode, Fingerprint: fingerprint(h.token), TTL: pttlDuration(h.pttl), Fence: h.fence,
					HolderName: name, Since: sinceFence(h.fence), value: value}
				info.seen = append(info.seen, sha1Hex(holderClass[h.mode]+h.token))
			}
			if len(info.Holders) > 0 { // the first to expire, as TTL and Fingerprint
				info.Since = info.Holders[0].Since
			}
		}
	}
	return info, nil
}

// sha1Hex returns the SHA-1 of s in hex, as Lua's redis.sha1hex does: how
// ForceReleaseHolder names what it saw without keeping a token. SHA-1 is
// no weakness here: a token is 128 random bits, which no digest gives back.
func sha1Hex(s string) string {
	sum := sha1.Sum([]byte(s))
	return hex.EncodeToString(sum[:])
}

// holderClass is the class that starts the name of a shared hold's holder
// in its sorted set, by the mode inspect.lua reports (see kind.go).
var holderClass = map[string]string{"permit": "s", "read": "r", "write": "w"}

// pttlDuration returns a PTTL in milliseconds as a Duration: -1 (one
// nanosecond under zero) for no expiry, as go-redis does.
func pttlDuration(ms int64) time.Duration {
	if ms < 0 {
		return -1
	}
	return time.Duration(ms) * time.Millisecond
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
//
// It deletes the holder it finds, and never one that obtains the lock
// after it looked: it is Inspect, then ForceReleaseHolder of what that
// saw. Every string key is a lock to it, as a lock taken with a plain SET
// NX by another client is one: look first (Inspect) when the key may be a
// value of another kind.
func (c *Client) ForceRelease(ctx context.Context, key string) (bool, error) {
	info, err := c.Inspect(ctx, key)
	if err != nil {
		return false, err
	}
	return c.ForceReleaseHolder(ctx, info)
}

// ForceReleaseHolder is ForceRelease of the holder that info shows, as
// Inspect or Scan returned it: it deletes the lock only while that holder
// still holds it, and for a semaphore or an RW lock, the holdings info
// lists and no others. It reports whether it deleted them; false when they
// were gone already (released, expired, or deleted by someone else), or
// info shows no holder.
//
// A call that go-redis sends again, when a reply is late, deletes once: a
// copy that runs after another holder took the lock leaves it alone, and
// the answer says what the first copy did. On a Redlock quorum it deletes
// the holder on every server that answers and still holds it; a server
// that holds another token keeps it until it expires.
func (c *Client) ForceReleaseHolder(ctx context.Context, info LockInfo) (bool, error) {
	if err := c.checkKey(info.Key); err != nil {
		return false, err
	}
	if !info.Held {
		return false, nil
	}
	if len(info.seen) == 0 {
		return false, fmt.Errorf("%w: ForceReleaseHolder of %s: a LockInfo that Inspect or Scan did not return", ErrInvalidOption, quoteKey(info.Key))
	}
	r, err := c.call(ctx, forceReleaseOp(info.Key, newToken(), info.seen))
	switch {
	case err != nil:
		return false, err
	case r.code == stateWrongType:
		return false, fmt.Errorf("%w: %s exists and is no lock, semaphore or RW lock", ErrWrongType, quoteKey(info.Key))
	}
	return r.code == ours, nil
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
// of a Cluster, and on every node of a Redlock (each lock once). The pattern
// is a Redis glob, as for KEYS and SCAN MATCH: "*" for all, ? * [abc] [^a]
// [a-z], and a backslash to escape. Scan uses SCAN, never KEYS, so it does
// not block Redis, and like SCAN it may miss locks taken or released while
// it runs. It finds the locks taken by dlock (through their fence keys), not
// those of other clients.
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

// inspectOp returns the inspection of the lock, semaphore or RW lock named
// key (see inspect.lua).
func inspectOp(key string) op {
	return op{name: "inspect", keys: holdKeys(key), decode: decodeInspect, onQuorum: (*quorum).inspect}.withScript(inspectScript, nil)
}

// forcedKind is the side key that force_release.lua marks a deletion in,
// so that a copy of the call sent again knows of it.
const forcedKind = "forced"

// forceReleaseOp returns the force release of the holdings seen on key
// (LockInfo.seen: the SHA-1 of a lock's token, or of the names of a shared
// hold's holders), by the call id.
func forceReleaseOp(key, id string, seen []string) op {
	args := make([]any, 0, 1+len(seen))
	args = append(args, id)
	for _, v := range seen {
		args = append(args, v)
	}
	keys := append(holdKeys(key), sideKey(forcedKind, key))
	return op{name: "force-release", keys: keys, onQuorum: (*quorum).forceRelease}.withScript(forceReleaseScript, nil, args...)
}

// decodeInspect reads inspect.lua's reply: {state, token, pttl, fence,
// waiters}, and for a shared hold also {kind, limit, holders}, holders
// flat as mode, name, pttl, fence for each.
func decodeInspect(v any) (reply, bool) {
	a, ok := v.([]any)
	if !ok || len(a) != 5 && len(a) != 8 {
		return reply{}, false
	}
	state, ok1 := a[0].(int64)
	token, ok2 := a[1].(string)
	pttl, ok3 := a[2].(int64)
	fence, ok4 := a[3].(string)
	waiters, ok5 := a[4].(int64)
	if !ok1 || !ok2 || !ok3 || !ok4 || !ok5 {
		return reply{}, false
	}
	r := reply{code: state, value: pttl, token: token, waiters: waiters}
	if fence != "" {
		var err error
		fence, r.fenceTag, _ = strings.Cut(fence, ":") // a Redlock holder's tag (raise_fence.lua)
		if r.fence, err = strconv.ParseInt(fence, 10, 64); err != nil {
			return reply{}, false
		}
	}
	if len(a) == 5 {
		return r, true
	}
	kind, ok1 := a[5].(string)
	limit, ok2 := a[6].(int64)
	flat, ok3 := a[7].([]any)
	if !ok1 || !ok2 || !ok3 || len(flat)%4 != 0 {
		return reply{}, false
	}
	r.kind, r.limit, r.holders = kind, limit, make([]holderReply, 0, len(flat)/4)
	if r.token != "" {
		r.token = r.token[1:] // a holder's name: its class, then its token
	}
	for i := 0; i < len(flat); i += 4 {
		mode, ok1 := flat[i].(string)
		name, ok2 := flat[i+1].(string)
		pttl, ok3 := flat[i+2].(int64)
		fence, ok4 := flat[i+3].(int64)
		if !ok1 || !ok2 || !ok3 || !ok4 || name == "" {
			return reply{}, false
		}
		r.holders = append(r.holders, holderReply{mode: mode, token: name[1:], pttl: pttl, fence: fence})
	}
	return r, true
}
