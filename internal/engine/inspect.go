package engine

import (
	"context"
	"crypto/sha1" //nolint:gosec // matches Lua's redis.sha1hex
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/redis/go-redis/v9"
)

// Inspection is what inspect.lua found under a name, as a quorum sees it
// on a Redlock.
type Inspection struct {
	Held  bool
	Token string // the holder's, or the first to expire of a shared hold's
	PTTL  int64  // its time to live in milliseconds; negative: no expiry
	// Fence is the holder's fence, or for a free key the last one handed
	// out; 0 if none is known (a lock's holder that has not asked for one)
	Fence int64
	// Since is when the holder took the lock, in the server's
	// microseconds; 0 if its value does not tell (see SplitValue)
	Since   int64
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
	return e.inspect(ctx, key, false)
}

// inspect is Inspect; with watch, it also marks a lock as waited for, so
// that its release tells the watch channel (see holder.lua).
func (e *Engine) inspect(ctx context.Context, key string, watch bool) (Inspection, error) {
	if err := e.CheckKey(key); err != nil {
		return Inspection{}, err
	}
	r, err := e.call(ctx, inspectOp(key, watch))
	switch {
	case err != nil:
		return Inspection{}, err
	case r.code == stateWrongType:
		return Inspection{}, fmt.Errorf("%w: %s exists and is no lock, semaphore or RW lock", ErrWrongType, QuoteKey(key))
	}
	in := Inspection{Held: r.code == stateHeld, PTTL: r.value, Fence: r.fence, Waiters: r.waiters, Kind: r.kind, Limit: r.limit}
	in.Token, in.Since = SplitValue(r.token)
	if !in.Held {
		return in, nil
	}
	if r.holders == nil {
		in.Seen = []string{sha1Hex(in.Token)}
		if in.Since > 0 && r.fenceTag != fenceTag(in.Token) {
			in.Fence = 0 // an earlier holder's: this one has asked for none yet
		}
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

// inspectOp returns the inspection of the lock, semaphore or RW lock named
// key (see inspect.lua).
func inspectOp(key string, watch bool) op {
	return withArgs(op{name: "inspect", keys: HoldKeys(key), decode: decodeInspect, onQuorum: (*quorum).inspect}, inspectScript, nil, inspectArgv{watch: watch})
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
