package engine

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/dlock-go/dlock/internal/slot"
)

// A multi-key holding: several locks taken at once, all of them or none,
// held as one (dlock.Client.ObtainMulti). Its keys are sorted and each
// named once. On a single server, Sentinel, a Cluster when the keys share
// a slot, and a Redlock of single servers, one script takes them all in
// one step, so that two callers that name the same keys in other orders
// never hold part each and wait for each other: whoever runs first gets
// all of them. A Redlock runs the one script on every node: each node
// grants all of the keys or none, so the quorum that grants the holding
// holds every key, in one round, and a failed attempt is taken back with
// one release per node, as a lock's is. (A quorum per key would take a
// round per key, and could leave some keys on a quorum and others not.)
// On a Cluster, keys in several slots are taken one slot after the other,
// in ascending slot order, and a slot found held releases the slots taken
// before it (see multi_slots.go). A Redlock of Clusters refuses keys in
// several slots.
//
// The holding's KEYS, for every one of its scripts (multi_*.lua): the lock
// keys, their fence keys, their release markers for the holder's token,
// then their holding keys, which tell Inspect the holding's keys (see
// HoldingKeys). Its kind's scripts take them all (Kind.scriptKeys), so that
// Release, Refresh, ReleaseAfter, TTL, the renewer's pipelined refresh and
// a Redlock's fence work on it as on any holding.

// MaxMultiKeys is how many distinct keys one multi-key holding may have.
const MaxMultiKeys = 64

// holdingKind is the kind of the side key that holds, while a multi-key
// holding lasts, its token and all of its keys (see HoldingKeys).
const holdingKind = "multi"

// KindMulti is the kind of the holdings of ObtainMulti and TryObtainMulti.
var KindMulti = &Kind{
	name:       "multi",
	release:    multiReleaseScript,
	refresh:    multiRefreshScript,
	ttl:        multiTTLScript,
	raiseFence: multiRaiseFenceScript,
	allKeys:    true,
}

// MultiKeys returns keys sorted, each once, or an error wrapping
// ErrInvalidKey: none, an empty one, more than MaxMultiKeys, or keys of
// several Cluster slots on a Redlock whose nodes are Clusters.
func (e *Engine) MultiKeys(keys []string) ([]string, error) {
	if err := e.Usable(); err != nil {
		return nil, err
	}
	if len(keys) == 0 {
		return nil, fmt.Errorf("%w: no keys", ErrInvalidKey)
	}
	sorted := slices.Clone(keys)
	slices.Sort(sorted)
	sorted = slices.Compact(sorted)
	switch {
	case sorted[0] == "":
		return nil, fmt.Errorf("%w: empty key", ErrInvalidKey)
	case len(sorted) > MaxMultiKeys:
		return nil, fmt.Errorf("%w: %d keys, more than the %d one holding may have", ErrInvalidKey, len(sorted), MaxMultiKeys)
	}
	if e.quorum != nil && e.clustered() {
		first := slot.Of(sorted[0])
		for _, key := range sorted[1:] {
			if slot.Of(key) != first {
				return nil, fmt.Errorf("%w: %s and %s are in different Cluster slots, which a Redlock of Clusters does not take together: give the keys one hash tag, as in {order}:a and {order}:b", ErrInvalidKey, QuoteKey(sorted[0]), QuoteKey(key))
			}
		}
	}
	return sorted, nil
}

// clustered reports whether a node of the Engine is a Redis Cluster,
// where one script touches one slot only.
func (e *Engine) clustered() bool {
	for _, n := range e.nodes {
		if _, ok := n.rdb.(*redis.ClusterClient); ok {
			return true
		}
	}
	return false
}

// multiScriptKeys returns the KEYS of the scripts of a multi-key holding
// of the sorted lock keys by the holder token: the keys, their fence keys,
// their release markers, dlock:freed<the fence key's rest>:<token>, as
// release.lua names a lock's, and their holding keys.
func multiScriptKeys(keys []string, token string) []string {
	n := len(keys)
	all := make([]string, multiBlocks*n)
	copy(all, keys)
	for i, key := range keys {
		fence := sideKey(fenceKind, key)
		all[n+i] = fence
		all[2*n+i] = "dlock:freed" + fence[len("dlock:"+fenceKind):] + ":" + token
		all[3*n+i] = sideKey(holdingKind, key)
	}
	return all
}

// multiLockKeys returns the lock keys among keys, the KEYS of a multi-key
// holding's scripts.
func multiLockKeys(keys []string) []string { return keys[:len(keys)/multiBlocks] }

// encodeHolding returns what the holding keys of a multi-key holding of
// the lock keys by token hold: the token, then each key as ':' length ':'
// key (a token has no colon; a key may have anything).
func encodeHolding(token string, keys []string) string {
	var b strings.Builder
	b.WriteString(token)
	for _, key := range keys {
		b.WriteByte(':')
		b.WriteString(strconv.Itoa(len(key)))
		b.WriteByte(':')
		b.WriteString(key)
	}
	return b.String()
}

// decodeHolding returns the keys that v, a holding key's value, lists if
// it is the holding of token; false if it is another's, or no holding.
func decodeHolding(v, token string) ([]string, bool) {
	rest, ok := strings.CutPrefix(v, token)
	if !ok {
		return nil, false
	}
	var keys []string
	for rest != "" {
		if rest, ok = strings.CutPrefix(rest, ":"); !ok {
			return nil, false
		}
		size, after, ok := strings.Cut(rest, ":")
		n, err := strconv.Atoi(size)
		if !ok || err != nil || n < 0 || n > len(after) {
			return nil, false
		}
		keys = append(keys, after[:n])
		rest = after[n:]
	}
	return keys, len(keys) > 0
}

// multiAttempt returns an attempt to take the locks of the sorted keys, with
// a fresh token.
func (e *Engine) multiAttempt(keys []string, ttl time.Duration, cfg Config) attempt {
	token := cfg.newMultiToken()
	return attempt{kind: KindMulti, keys: multiScriptKeys(keys, token), token: token, arg: token, ttl: ttl, rel: e.releaseSetting()}
}

// multiAcquireArgv is multi_acquire.lua's ARGV.
type multiAcquireArgv struct {
	holder    any
	ttl       int64  // milliseconds
	fenceless string // "1" on a Redlock node, else ""
	holding   string // what the holding keys hold (encodeHolding)
}

func (multiAcquireArgv) count() int { return 4 }

func (a multiAcquireArgv) appendTo(args []any) []any {
	return append(args, a.holder, a.ttl, a.fenceless, a.holding)
}

// multiOp returns the acquire of the multi-key attempt a.
func (e *Engine) multiOp(a attempt) op {
	o := op{name: "acquire", keys: a.keys, ttl: a.ttl, acq: a, decode: decodeMulti, onNode: (*node).acquire, onQuorum: (*quorum).acquire}
	fenceless := ""
	if e.quorum != nil {
		fenceless = "1"
	}
	holding := encodeHolding(a.token, multiLockKeys(a.keys))
	return withArgs(o, multiAcquireScript, nil, multiAcquireArgv{holder: a.arg, ttl: a.ttl.Milliseconds(), fenceless: fenceless, holding: holding})
}

// decodeMulti reads multi_acquire.lua's reply: {code, value[, key]}, the
// key that refused in token.
func decodeMulti(v any) (reply, bool) {
	s, ok := v.([]any)
	if !ok || len(s) < 2 || len(s) > 3 {
		return reply{}, false
	}
	code, ok1 := s[0].(int64)
	value, ok2 := s[1].(int64)
	r := reply{code: code, value: value}
	if len(s) == 3 {
		r.token, ok = s[2].(string)
		ok2 = ok2 && ok
	}
	return r, ok1 && ok2
}

// multiTry makes one attempt a to take the locks of a multi-key holding in
// one script; as try, which it is for KindMulti.
func (e *Engine) multiTry(ctx context.Context, a attempt, cfg Config) (*Hold, reply, error) {
	sent := time.Now()
	o := e.multiOp(a)
	a.keyArgs = o.keyArgs() // for the Hold's calls, and for the take-back
	r, err := e.call(ctx, o)
	if err != nil {
		if replyLost(err) {
			e.releaseInBackground(a) // the script may have run
		}
		return nil, r, err
	}
	if r.code == acquired {
		h, err := e.hold(a, r, sent, cfg)
		return h, r, err
	}
	return nil, r, multiRefusal(a, r)
}

// multiRefusal is the error of a multi-key acquire that did not take the
// locks, with the reply r.
func multiRefusal(a attempt, r reply) error {
	n := len(multiLockKeys(a.keys))
	switch r.code {
	case held:
		return fmt.Errorf("%w: %s, one of %d keys, is held by another holder%s", ErrNotObtained, quoteMultiKey(r.token), n, multiExpiresIn(r.value))
	case wrongType:
		return fmt.Errorf("%w: %s, one of %d keys, is a key of another type, not a lock: nothing was taken", ErrWrongType, quoteMultiKey(r.token), n)
	}
	return fmt.Errorf("dlock: acquire %s: unexpected reply code %d", QuoteKey(a.keys[0]), r.code)
}

// quoteMultiKey quotes the key a multi-key acquire names: "" on a Redlock,
// whose quorum tells no key.
func quoteMultiKey(key string) string {
	if key == "" {
		return "a key"
	}
	return QuoteKey(key)
}

func multiExpiresIn(pttl int64) string {
	if pttl == unknownTTL || pttl == freeButQueued {
		return ""
	}
	return expiresIn(pttlDuration(pttl))
}
