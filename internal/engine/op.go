package engine

import (
	"context"
	"time"

	"github.com/dlock-go/dlock/internal/round"
)

// op is one operation on a lock: the script each node runs, with its KEYS
// and ARGV, how its reply is read, and how a Redlock quorum decides it. An
// operation carries all of that itself, so a new kind of hold brings its
// own scripts and nothing in node or quorum has to know it. An op without
// a quorum rule is refused by a quorum, never run as another.
type op struct {
	name   string // in errors: "acquire", "release", "refresh", "ttl", "inspect", "force-release"
	script *script
	keys   []string
	// argv is the whole of EVALSHA's arguments: "evalsha", the digest, the
	// number of keys, the keys, then the script's ARGV; built once, in one
	// slice, by withArgs, and only read after that (a quorum sends one op
	// to every node at once)
	argv []any
	// decode reads the script's reply; nil for the usual one: an integer,
	// or {code, value[, head]} (see decodeStatus)
	decode func(v any) (reply, bool)
	// onNode, if set, is how a node carries the operation out instead of
	// running script by itself (acquires: see node.acquire)
	onNode func(n *node, ctx context.Context, o op) (reply, error)
	// onQuorum decides the operation on a Redlock quorum from the nodes'
	// replies; nil: a quorum refuses it
	onQuorum func(q *quorum, ctx context.Context, o op) (reply, error)

	ttl   time.Duration     // acquire and refresh: what a quorum checks the validity against
	acq   attempt           // acquire: the attempt, which its take-back is made from
	after *round.Stragglers // Redlock calls of a Lock: its acquire's nodes still to answer
}

// keyArgs returns o's keys as boxed in its argv, for later ops of the
// same holding (see withArgs).
func (o op) keyArgs() []any {
	if o.argv == nil {
		return nil
	}
	return o.argv[3 : 3+len(o.keys) : 3+len(o.keys)]
}

// key is the lock key, for messages.
func (o op) key() string { return o.keys[0] }

// isAcquire reports whether o may take a lock: an acquire, which a caller
// that gave up on it must take back.
func (o op) isAcquire() bool { return o.acq.kind != nil }

// reply is a script's answer: {code, value} (see the .lua files), and for
// inspect also the token and the fence.
type reply struct {
	code, value int64
	head        bool // queued acquire: the caller is first in the queue
	token       string
	fence       int64
	waiters     int64             // inspect: live waiters in the queue
	fenceTag    string            // inspect: the tag stored with the fence, on a Redlock node (raise_fence.lua)
	kind        string            // inspect: "semaphore" or "rwmutex" for a shared hold, else ""
	limit       int64             // inspect: a semaphore's limit
	holders     []holderReply     // inspect: the holders of a shared hold; nil for a lock
	granted     []bool            // Redlock acquire: the nodes that granted it; its fence is not on a quorum yet
	stragglers  *round.Stragglers // Redlock acquire: nodes that had not answered yet
}

// Reply codes of the acquire scripts (acquire.lua, queue_acquire.lua and
// the shared holds' hold_acquire.lua).
const (
	acquired  = 1 // value is the fence
	held      = 0 // value is the holder's PTTL in milliseconds, -1 if none, -2 free but others go first
	wrongType = 2 // the key is not of this kind of hold
	// limitMismatch: a semaphore whose permits were taken with another
	// limit; value is that limit
	limitMismatch = 3
	// guarded: the guard key (WithGuard) exists; its value is in token
	guarded = 4
)

// Reply codes of the scripts that act on the caller's holding (release,
// refresh, ttl, raise fence).
const (
	notOurs = 0 // the holding is gone or another's: nothing was done
	ours    = 1 // done (by this call, or by a copy of it sent before)
	// releasedBefore: another release of this holding (of the same Lock)
	// ended it; nothing was done
	releasedBefore = 2
)

// Reply codes of inspect.lua (the state) and force_release.lua.
const (
	stateFree      = 0 // no such key
	stateHeld      = 1 // a lock or a shared hold
	stateWrongType = 2 // a key of another type: no lock
)

// unknownTTL is the holder's PTTL in a held reply that does not tell it
// (a Redlock node's acquire, see node.acquireFenceless).
const unknownTTL = -3

// freeButQueued is the PTTL of a held reply when the lock is free but
// earlier waiters go first (fair mode).
const freeButQueued = -2

// decodeStatus decodes the usual reply: an integer, or {code, value[, head]}.
func decodeStatus(v any) (reply, bool) {
	switch v := v.(type) {
	case int64:
		return reply{code: v}, true
	case []any:
		if len(v) == 2 && v[0] == int64(guarded) {
			guard, ok := v[1].(string)
			return reply{code: guarded, token: guard}, ok
		}
		if len(v) == 2 || len(v) == 3 {
			code, ok1 := v[0].(int64)
			value, ok2 := v[1].(int64)
			var head int64
			ok3 := true
			if len(v) == 3 {
				head, ok3 = v[2].(int64)
			}
			if ok1 && ok2 && ok3 {
				return reply{code: code, value: value, head: head == 1}, true
			}
		}
	}
	return reply{}, false
}

// holderReply is one holder of a shared hold, as inspect.lua tells it.
type holderReply struct {
	mode, token string
	pttl, fence int64
}
