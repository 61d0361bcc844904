package engine

import (
	"fmt"
	"time"
)

// Kind is a kind of hold: a lock, a semaphore's permit, or a read or
// write hold of an RW lock. Its scripts are its operations: a Lock of any
// kind is released, refreshed, renewed, fenced and woken for through them
// by the same machinery.
type Kind struct {
	name string // "lock", "semaphore", "read", "write"
	// acquire takes the hold in one step without joining the queue of
	// waiters: a first try, while nobody contends. nil: queueAcquire with
	// no lease does that.
	acquire      *script
	queueAcquire *script // takes the hold, or waits for it in the queue
	release      *script // also a waiter's leave, and the wake-up of the next
	refresh      *script
	ttl          *script
	raiseFence   *script // Redlock: stores the quorum's fence (see fenceRaise)
	// setNX: a Redlock node takes it with a plain SET NX (see
	// node.acquireFenceless), not with acquire
	setNX bool
	// class is what the name of a holder starts with in a shared hold's
	// set of holders (hold_acquire.lua); "" for a lock, named by its token
	class string
	// allKeys: the refresh, ttl and raise fence scripts take all of the
	// holding's keys (a multi-key holding, see multi.go)
	allKeys bool
	// fenceLater: the acquire hands out no fence, but the time it was
	// taken (acquire.lua); the first Fence has raiseFence hand one out
	fenceLater bool
}

// scriptKeys returns the KEYS that the refresh, ttl and raise fence
// scripts of this kind take, of a holding's keys: a lock's key and fence
// key; all of a shared hold's.
func (k *Kind) scriptKeys(keys []string) []string {
	if k.class == "" && !k.allKeys {
		return keys[:2]
	}
	return keys
}

// KindLock is the kind of the locks of Obtain, TryObtain and Do.
var KindLock = &Kind{
	name:         "lock",
	acquire:      acquireScript,
	queueAcquire: queueAcquireScript,
	release:      releaseScript,
	refresh:      refreshScript,
	ttl:          ttlScript,
	raiseFence:   raiseFenceScript,
	setNX:        true,
	fenceLater:   true,
}

// The kinds of the shared holds: a semaphore's permits, an RW lock's read
// and write holds. One family of scripts serves them all (hold_*.lua): the
// holders of a name live in one sorted set, scored by when each expires,
// and the first letter of a holder's name there tells its kind.
var (
	KindSemaphore = sharedKind("semaphore", "s")
	KindRead      = sharedKind("read", "r")
	KindWrite     = sharedKind("write", "w")
)

func sharedKind(name, class string) *Kind {
	return &Kind{
		name:         name,
		queueAcquire: holdAcquireScript,
		release:      holdReleaseScript,
		refresh:      holdRefreshScript,
		ttl:          holdTTLScript,
		raiseFence:   holdRaiseFenceScript,
		class:        class,
	}
}

// attempt is one acquire of a hold: what a waiter changes between its
// tries, and what a failed or abandoned acquire is taken back with.
type attempt struct {
	kind *Kind
	keys []string // the scripts' KEYS (see Engine.Keys)
	// keyArgs: the first of keys as the acquire boxed them, once it was
	// made (see withArgs); nil before
	keyArgs []any
	token   string // the holder's token, for the Lock
	// marker is the name of the holding's release marker (see markerKey),
	// made with the token; "" in an attempt made by hand, which then
	// makes it when needed (see markerKey)
	marker string
	// arg is the holder's name in Redis, boxed once for the scripts' ARGV:
	// the token for a lock, class and token for a shared hold
	arg   any
	ttl   time.Duration
	fair  bool          // WithFair: the waiter takes its turn in the queue
	lease time.Duration // the waiter's lease in the queue; 0 to not join it
	// queued: the channel on which the waiter hears of a handoff or of its
	// turn to try, its subscriber's own; part of its name in the queue
	notify string
	woken  bool           // queued acquire of a barging waiter: a release woke it
	limit  any            // a semaphore's limit, boxed; nil for other kinds
	rel    releaseSetting // the Client's, for a release
	record bool           // AsRecord: an acquire whose outcome is unknown is kept, not taken back
	// WithGuard: the KEYS of a first try, the lock key, its fence key and
	// the guard key (keys then ends with the guard key too)
	guarded []string
}

// guard makes every try of the attempt look at the guard key first (see
// WithGuard).
func (a *attempt) guard(key string) {
	a.keys = append(a.keys[:len(a.keys):len(a.keys)], key)
	a.guarded = []string{a.keys[0], a.keys[1], key}
}

// newToken gives the attempt a fresh token for cfg, with its holder's
// name and release marker (see waiter.obtain).
func (a *attempt) newToken(cfg Config) {
	var name string
	a.marker, name, a.token = newMarkedToken(a.keys[1], a.kind.class, cfg.HolderSuffix, cfg.ValueSuffix)
	a.arg = name
}

// markerKey returns the name of the release marker of the holding the
// attempt takes (see markerKey), which its releases and refreshes take
// after its keys; "" for a kind whose keys hold their markers already (a
// multi-key holding's).
func (a attempt) markerKey() string {
	switch {
	case a.kind.allKeys:
		return ""
	case a.marker != "":
		return a.marker
	}
	name, _ := a.arg.(string)
	return markerKey(a.keys[1], name)
}

// boxedMarker returns a.markerKey() boxed, or nil if there is none.
func (a attempt) boxedMarker() any {
	if m := a.markerKey(); m != "" {
		return m
	}
	return nil
}

// queued reports whether the acquire goes through the queue of waiters: in
// fair mode always, else once the waiter joined it.
func (a attempt) queued() bool { return a.fair || a.lease > 0 }

// op returns the acquire of this attempt.
func (a attempt) op() op {
	o := op{name: "acquire", keys: a.keys, ttl: a.ttl, acq: a, onNode: (*node).acquire, onQuorum: (*quorum).acquire}
	if !a.queued() && a.kind.acquire != nil {
		o.keys = a.keys[:2]
		boxed := a.keyArgs
		if a.guarded != nil {
			o.keys, boxed = a.guarded, boxed[:min(2, len(boxed))]
		}
		return withArgs(o, a.kind.acquire, boxed, acquireArgv{holder: a.arg, ttl: a.ttl.Milliseconds()})
	}
	mode, woken := "", ""
	if !a.fair {
		mode = "barge"
	}
	if a.woken {
		woken = "1"
	}
	return withArgs(o, a.kind.queueAcquire, a.keyArgs, queueAcquireArgv{holder: a.arg, ttl: a.ttl.Milliseconds(), lease: a.lease.Milliseconds(),
		notify: a.notify, mode: mode, woken: woken, limit: a.limit})
}

// boxedKeys returns the keys that o, an op of this attempt, boxed in its
// argv, as far as they stand where the attempt's own keys do (a first try
// WithGuard sends the guard key third): those its later ops may reuse.
func (a attempt) boxedKeys(o op) []any {
	boxed := o.keyArgs()
	n := 0
	for n < len(boxed) && n < len(a.keys) && o.keys[n] == a.keys[n] {
		n++
	}
	return boxed[:n:n]
}

// undo returns the operation that takes back what the attempt may have
// done: release the hold if it got it, and for a waiter in the queue also
// leave it (and pass the hold on). quiet: a Redlock attempt's take-back,
// which tells nobody (see quorum.undo).
func (a attempt) undo(quiet bool) op {
	r := releaseArgv{holder: a.arg, call: takeBack, releaseSetting: a.rel, limit: a.limit}
	switch {
	case a.queued():
		r.mode, r.ttl, r.notify = "leave", a.ttl.Milliseconds(), a.notify
	case quiet:
		r.mode = "quiet"
	}
	return releaseOp(a.kind, a.keys, a.keyArgs, a.boxedMarker(), r)
}

// releaseOp returns the release of a holding with r, or with r.mode
// "leave", a waiter's leave. boxed are keys boxed already (see
// op.keyArgs); marker is the holding's release marker key, boxed, or nil
// (see attempt.markerKey).
func releaseOp(kind *Kind, keys []string, boxed []any, marker any, r releaseArgv) op {
	o := op{name: "release", keys: keys}
	if r.mode == "leave" {
		o.name = "leave" // a quorum has no queue to leave
	} else {
		o.onQuorum = (*quorum).release
	}
	return withMarkedArgs(o, kind.release, boxed, marker, r)
}

// The operations of a Lock, of whatever kind: through its kind's scripts.

// wrongTypeError is the error of an acquire of this kind on a key that
// holds something else.
func (k *Kind) wrongTypeError(key string) error {
	return fmt.Errorf("%w: %s holds another kind of hold, or a key of another type, not a %s", ErrWrongType, QuoteKey(key), k.Noun())
}

// Noun names a holding of this kind in messages.
func (k *Kind) Noun() string {
	switch k.name {
	case "semaphore":
		return "semaphore permit"
	case "read", "write":
		return k.name + " hold of an RW lock"
	}
	return k.name
}

// Name is the kind's name in events: "lock", "semaphore", "read", "write".
func (k *Kind) Name() string { return k.name }
