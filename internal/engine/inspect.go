package engine

import (
	"context"
	"crypto/sha1" //nolint:gosec // matches Lua's redis.sha1hex
	"encoding/hex"
	"errors"
	"fmt"
	"iter"
	"strconv"
	"strings"

	"github.com/redis/go-redis/v9"

	"github.com/dlock-go/dlock/internal/slot"
)

// Inspection is what inspect.lua found under a name, as a quorum sees it
// on a Redlock.
type Inspection struct {
	Held    bool
	Token   string // the holder's, or the first to expire of a shared hold's
	PTTL    int64  // its time to live in milliseconds; negative: no expiry
	Fence   int64
	Waiters int64
	Kind    string   // "semaphore" or "rwmutex" for a shared hold, else ""
	Limit   int64    // a semaphore's
	Holders []HeldBy // a shared hold's holders, first to expire first; nil for a lock
	// Seen names the holders as force_release.lua compares them (the SHA-1
	// of their names in Redis): ForceRelease deletes only those
	Seen []string
}

// HeldBy is one holder of a shared hold.
type HeldBy struct {
	Mode, Token string
	PTTL, Fence int64
}

// Inspect looks at the name key without changing anything. A key of
// another type is an error wrapping ErrWrongType.
func (e *Engine) Inspect(ctx context.Context, key string) (Inspection, error) {
	if err := e.CheckKey(key); err != nil {
		return Inspection{}, err
	}
	r, err := e.call(ctx, inspectOp(key))
	switch {
	case err != nil:
		return Inspection{}, err
	case r.code == stateWrongType:
		return Inspection{}, fmt.Errorf("%w: %s exists and is no lock, semaphore or RW lock", ErrWrongType, QuoteKey(key))
	}
	in := Inspection{Held: r.code == stateHeld, Token: r.token, PTTL: r.value, Fence: r.fence, Waiters: r.waiters, Kind: r.kind, Limit: r.limit}
	if !in.Held {
		return in, nil
	}
	if r.holders == nil {
		in.Seen = []string{sha1Hex(r.token)}
		return in, nil
	}
	in.Holders = make([]HeldBy, len(r.holders))
	for i, h := range r.holders {
		in.Holders[i] = HeldBy{Mode: h.mode, Token: h.token, PTTL: h.pttl, Fence: h.fence}
		in.Seen = append(in.Seen, sha1Hex(holderClass[h.mode]+h.token))
	}
	return in, nil
}

// HoldingKeys returns the keys of the multi-key holding by token (see
// IsMultiToken) that holds key, sorted, as its holding key tells them; nil
// if none tells (the holding ended). On a Redlock, the first node that
// answers with the holding tells them.
func (e *Engine) HoldingKeys(ctx context.Context, key, token string) ([]string, error) {
	if err := e.CheckKey(key); err != nil {
		return nil, err
	}
	holding := sideKey(holdingKind, key)
	var errs []error
	for _, n := range e.nodes {
		v, err := bounded(ctx, e, n, "inspect", key, func(ctx context.Context) (string, error) {
			v, err := n.rdb.Get(ctx, holding).Result()
			if errors.Is(err, redis.Nil) {
				return "", nil
			}
			return v, err
		}, nil)
		if err != nil {
			errs = append(errs, n.wrap("inspect", key, err))
			continue
		}
		if keys, ok := decodeHolding(v, token); ok {
			return keys, nil
		}
	}
	if len(errs) == len(e.nodes) {
		return nil, errors.Join(errs...)
	}
	return nil, nil
}

// ForceRelease deletes the holding under key if its holders are still
// those of seen (Inspection.Seen), and reports whether it deleted one.
func (e *Engine) ForceRelease(ctx context.Context, key string, seen []string) (bool, error) {
	r, err := e.call(ctx, forceReleaseOp(key, newToken(), seen))
	switch {
	case err != nil:
		return false, err
	case r.code == stateWrongType:
		return false, fmt.Errorf("%w: %s exists and is no lock, semaphore or RW lock", ErrWrongType, QuoteKey(key))
	}
	return r.code == ours, nil
}

// ScanKeys yields the name of every holding whose fence key a SCAN of
// every node finds (of every primary of a Cluster), once each, that
// matches the Redis glob pattern.
func (e *Engine) ScanKeys(ctx context.Context, pattern string) iter.Seq2[string, error] {
	return func(yield func(string, error) bool) {
		var seen map[string]bool // of a Redlock, whose nodes hold the same keys
		if len(e.nodes) > 1 {
			seen = map[string]bool{}
		}
		for _, n := range e.nodes {
			shards, err := bounded(ctx, e, n, "scan", pattern, n.shards, nil)
			if err != nil {
				yield("", n.wrap("scan", pattern, err))
				return
			}
			for _, shard := range shards {
				if !e.scanShard(ctx, n, shard, pattern, seen, yield) {
					return
				}
			}
		}
	}
}

// scanShard yields the names under one server's fence keys, and reports
// whether to go on.
func (e *Engine) scanShard(ctx context.Context, n *node, shard redis.Cmdable, pattern string, seen map[string]bool, yield func(string, error) bool) bool {
	var cursor uint64
	for {
		type page struct {
			keys []string
			next uint64
		}
		p, err := bounded(ctx, e, n, "scan", pattern, func(ctx context.Context) (page, error) {
			keys, next, err := shard.Scan(ctx, cursor, "dlock:"+fenceKind+"*", scanCount).Result()
			return page{keys, next}, err
		}, nil)
		if err != nil {
			return yield("", n.wrap("scan", pattern, err))
		}
		for _, side := range p.keys {
			key, ok := lockKeyOf(fenceKind, side)
			if !ok || !matchPattern(pattern, key) || seen[key] {
				continue
			}
			if seen != nil {
				seen[key] = true
			}
			if !yield(key, nil) {
				return false
			}
		}
		if p.next == 0 {
			return true
		}
		cursor = p.next
	}
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
	return withArgs(op{name: "inspect", keys: HoldKeys(key), decode: decodeInspect, onQuorum: (*quorum).inspect}, inspectScript, nil, noArgv{})
}

// forcedKind is the side key that force_release.lua marks a deletion in,
// so that a copy of the call sent again knows of it.
const forcedKind = "forced"

// forceReleaseOp returns the force release of the holdings seen on key
// (LockInfo.seen: the SHA-1 of a lock's token, or of the names of a shared
// hold's holders), by the call id.
func forceReleaseOp(key, id string, seen []string) op {
	keys := append(HoldKeys(key), sideKey(forcedKind, key))
	return withArgs(op{name: "force-release", keys: keys, onQuorum: (*quorum).forceRelease}, forceReleaseScript, nil, forceReleaseArgv{id: id, seen: seen})
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

// scanCount is how many keys one SCAN call asks a server to look at.
const scanCount = 500

// matchPattern reports whether s matches the Redis glob pattern, byte by
// byte, as KEYS and SCAN MATCH do (Redis's stringmatchlen): * matches any
// run of bytes, ? one byte, [abc] [^abc] [a-z] a class, and \ escapes the
// next byte. An unclosed [ matches up to the end of the pattern, as in Redis.
func matchPattern(pattern, s string) bool {
	// One pass with backtracking to the last '*' only: a later star can
	// match whatever an earlier one would have, so this is enough, and it
	// takes at most len(pattern)*len(s) steps on megabyte keys too.
	px, sx := 0, 0
	starPx, starSx := -1, 0
	for px < len(pattern) || sx < len(s) {
		if px < len(pattern) {
			switch c := pattern[px]; c {
			case '*':
				starPx, starSx = px, sx
				px++
				continue
			case '?':
				if sx < len(s) {
					px, sx = px+1, sx+1
					continue
				}
			case '[':
				if sx < len(s) {
					if rest, ok := matchClass(pattern[px+1:], s[sx]); ok {
						px, sx = len(pattern)-len(rest), sx+1
						continue
					}
				}
			default:
				width := 1
				if c == '\\' && px+1 < len(pattern) {
					c, width = pattern[px+1], 2
				}
				if sx < len(s) && s[sx] == c {
					px, sx = px+width, sx+1
					continue
				}
			}
		}
		if starPx < 0 || starSx >= len(s) {
			return false
		}
		starSx++ // let the last star take one more byte
		px, sx = starPx+1, starSx
	}
	return true
}

// matchClass matches c against the class that starts at class (after the
// '['), and returns the pattern after the class's ']'.
func matchClass(class string, c byte) (rest string, ok bool) {
	negate := len(class) > 0 && class[0] == '^'
	if negate {
		class = class[1:]
	}
	match := false
	for len(class) > 0 && class[0] != ']' {
		switch {
		case class[0] == '\\' && len(class) > 1:
			class = class[1:]
			match = match || class[0] == c
		case len(class) > 2 && class[1] == '-':
			lo, hi := class[0], class[2]
			if lo > hi {
				lo, hi = hi, lo
			}
			match = match || (lo <= c && c <= hi)
			class = class[2:]
		default:
			match = match || class[0] == c
		}
		class = class[1:]
	}
	if len(class) > 0 {
		class = class[1:] // the ']'
	}
	return class, match != negate
}
