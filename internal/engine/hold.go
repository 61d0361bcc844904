package engine

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/dlock-go/dlock/internal/renew"
	"github.com/dlock-go/dlock/internal/round"
	"github.com/dlock-go/dlock/internal/slot"
)

// Hold is one holding: a lock, a semaphore's permit, or a read or write
// hold of an RW lock, as the Engine obtained it. A dlock.Lock wraps one, and
// its methods are the Lock's without the observer's part. It is safe for
// concurrent use.
type Hold struct {
	// Owner is the holding of the package above that this Hold is part of
	// (its dlock.Lock), set by Options.NewHold; nil for a Hold alone
	Owner any

	e     *Engine
	kind  *Kind
	key   string
	token string
	fence int64
	keys  []string // the scripts' KEYS, from the acquire
	// marker is the name of the holding's release marker, the last of the
	// KEYS of its releases and refreshes: boxed as &marker, which
	// allocates nothing (see withMarkedArgs); never changed after init. ""
	// for a kind whose keys hold their markers (see attempt.markerKey)
	marker string
	// renewKeys: WithAutoRenew, the KEYS of the renewer's refreshes (the
	// kind's scriptKeys, then marker), made once; nil for other Holds
	renewKeys []string
	// the first of keys as the acquire boxed them, for the ARGV of its
	// later calls (see withArgs)
	keyArgs []any
	arg     any          // the holder's name in Redis, boxed once for the scripts' ARGV (see attempt)
	limit   any          // a semaphore's limit, boxed; nil for other kinds
	ttl     atomic.Int64 // of the acquire or the last Refresh, and of every automatic refresh
	until   atomic.Int64 // validity deadline, nanoseconds after the Engine's epoch
	gone    atomic.Bool  // released, or found not held: no need to ask Redis again
	// set before the Hold is shared, then only read; next to gone, in the
	// room its alignment leaves
	renewed bool         // WithAutoRenew: the Engine's renewer refreshes it
	record  bool         // AsRecord: ends as released at Until
	calls   atomic.Int64 // release calls made so far (see nextCall)

	mu     sync.Mutex
	err    error                   // why the hold ended: ErrReleased or ErrLockLost; nil while held
	life   context.Context         // made by the first Done; cancelled with err
	cancel context.CancelCauseFunc // of life
	expiry *time.Timer             // without auto-renew: ends the hold at Until, once life exists
	raise  *fenceRaise             // Redlock: hands out the fence, on a quorum, at the first Fence
	// Redlock: the acquire's nodes that had not answered; calls to them
	// wait for them (set before the Hold is shared, then only read)
	stragglers *round.Stragglers
	raised     sync.Once
	renewal    renew.State // the renewer's bookkeeping (see renewedHold)
	// since: a lock on one deployment, the server's time of its acquire,
	// whose value in Redis is "token:since" (see holder.lua); 0 for other
	// holdings. value is that value, made at the first refresh (see
	// refreshArg).
	since     int64
	valueOnce sync.Once
	value     any
}

// init makes h the Hold that the acquire a obtained, with the fence it got.
// It keeps the acquire's keys and boxed name for its own calls.
func (h *Hold) init(e *Engine, a attempt, fence int64, sent time.Time) {
	h.e, h.kind, h.key, h.token, h.fence = e, a.kind, a.keys[0], a.token, fence
	h.keys, h.keyArgs, h.arg, h.limit = a.keys, a.keyArgs, a.arg, a.limit
	h.marker = a.markerKey()
	h.ttl.Store(int64(a.ttl))
	h.setUntil(sent, a.ttl)
}

// Kind returns the kind of the holding.
func (h *Hold) Kind() *Kind { return h.kind }

// Renewed reports whether the Engine's renewer refreshes the holding.
func (h *Hold) Renewed() bool { return h.renewed }

// Record reports whether the holding is a record (AsRecord).
func (h *Hold) Record() bool { return h.record }

// Key returns the name of the holding.
func (h *Hold) Key() string { return h.key }

// Token returns the holder's token: its name in Redis (see dlock.Lock.Token).
func (h *Hold) Token() string { return h.token }

// Fence returns the holding's fence. A lock's is handed out at the first
// call: by Redis, or on a Redlock by a quorum (see fenceRaise and
// dlock.Lock.Fence); 0 if that fails.
func (h *Hold) Fence() int64 {
	if h.raise != nil || h.kind.fenceLater {
		h.raised.Do(func() {
			ctx, cancel := context.WithDeadline(context.Background(), h.Until())
			defer cancel()
			if h.raise != nil {
				h.fence, _ = h.raise.run(ctx)
				return
			}
			if r, err := h.e.call(ctx, raiseFenceOp(h.kind, h.keys, h.arg, 0, h.currentTTL())); err == nil && r.code == ours {
				h.fence = r.value
			}
		})
	}
	return h.fence
}

// Until returns the holding's conservative deadline: the last acquire or
// refresh's send time plus its ttl, less Drift (see dlock.Lock.Until).
func (h *Hold) Until() time.Time {
	return h.e.epoch.Add(time.Duration(h.until.Load()))
}

// currentTTL is the ttl of the acquire or of the last Refresh: the one the
// renewer keeps.
func (h *Hold) currentTTL() time.Duration { return time.Duration(h.ttl.Load()) }

// until returns the validity deadline of an acquire or refresh sent at sent
// with ttl, in nanoseconds after client.epoch, as kept in l.until.
func (h *Hold) untilOf(sent time.Time, ttl time.Duration) int64 {
	ttl = ttl.Truncate(time.Millisecond)
	return int64(sent.Sub(h.e.epoch) + ttl - drift(ttl))
}

// setUntil sets the validity deadline of an acquire or refresh sent at sent
// with ttl, of which Redis got the whole milliseconds.
func (h *Hold) setUntil(sent time.Time, ttl time.Duration) {
	h.until.Store(h.untilOf(sent, ttl))
}

// Release releases the holding if it is still ours; see dlock.Lock.Release.
func (h *Hold) Release(ctx context.Context) error {
	return h.release(ctx, h.releaseOp(), ErrReleased)
}

// release sends o, which ends l's holding in Redis (Release,
// ReleaseStoring, ReleaseAfter), and ends l with released if it did, as
// lost if it found the lock gone.
func (h *Hold) release(ctx context.Context, o op, released error) (err error) {
	if err := h.check("release"); err != nil {
		return err
	}
	if h.renewed {
		// No automatic refresh may be on its way: landing after o, it would
		// find the lock gone and end it as lost (a release), or set the old
		// ttl back (ReleaseAfter).
		if h.e.renewer.Pause(ctx, (*renewedHold)(h)) != nil {
			return fmt.Errorf("dlock: release %s: %w", QuoteKey(h.key), contextError(ctx))
		}
	}
	r, err := h.e.call(ctx, o)
	if err != nil {
		if h.renewed {
			h.e.renewer.Resume((*renewedHold)(h))
		}
		return err
	}
	switch r.code {
	case ours:
		h.end(released)
		return nil
	case releasedBefore:
		h.end(ErrReleased) // if the other call has not yet: it will say the same
		return h.notHeld("release")
	}
	h.end(h.lostError("release found it gone or taken"))
	return h.notHeld("release")
}

// ReleaseAfter ends the holding here and keeps it in Redis for d; see
// dlock.Lock.ReleaseAfter.
func (h *Hold) ReleaseAfter(ctx context.Context, d time.Duration) error {
	if d < time.Millisecond {
		return h.Release(ctx)
	}
	return h.release(ctx, h.releaseAfterOp(d), fmt.Errorf("%w: %s is kept for %v, then it expires", ErrReleased, QuoteKey(h.key), d))
}

// Refresh sets the holding's time to live to ttl if it is still ours; see
// dlock.Lock.Refresh.
func (h *Hold) Refresh(ctx context.Context, ttl time.Duration) (err error) {
	if err := CheckTTL(ttl); err != nil {
		return err
	}
	if err := h.check("refresh"); err != nil {
		return err
	}
	sent := time.Now()
	r, err := h.e.call(ctx, h.refreshOp(ttl))
	if err != nil {
		return err
	}
	switch r.code {
	case ours:
	case releasedBefore:
		h.end(ErrReleased) // by a release of this Lock, at the same time
		return h.notHeld("refresh")
	default:
		h.end(h.lostError("refresh found it gone or taken"))
		return h.notHeld("refresh")
	}
	if h.renewed {
		h.e.renewer.Refreshed((*renewedHold)(h), sent, ttl)
		return nil
	}
	h.ttl.Store(int64(ttl))
	h.setUntil(sent, ttl)
	h.rearm()
	return nil
}

// TTL returns the holding's time to live as Redis reports it; see
// dlock.Lock.TTL.
func (h *Hold) TTL(ctx context.Context) (time.Duration, error) {
	if err := h.check("ttl"); err != nil {
		return 0, err
	}
	r, err := h.e.call(ctx, h.ttlOp())
	switch {
	case err != nil:
		return 0, err
	case r.code != ours:
		h.end(h.lostError("ttl found it gone or taken"))
		return 0, h.notHeld("ttl")
	case r.value < 0:
		return -1, nil
	}
	return time.Duration(r.value) * time.Millisecond, nil
}

// check returns the error of an operation that need not ask Redis.
func (h *Hold) check(op string) error {
	if err := h.e.Usable(); err != nil {
		return err
	}
	if h.gone.Load() {
		return h.notHeld(op)
	}
	return nil
}

func (h *Hold) notHeld(op string) error {
	return fmt.Errorf("%w: %s %s: the lock is not ours any more", ErrNotHeld, op, QuoteKey(h.key))
}

// Done returns a channel closed when the holding ends; see
// dlock.Lock.Done. The first call sets it up.
func (h *Hold) Done() <-chan struct{} {
	return h.lifetime().Done()
}

// Err returns nil while the holding lasts, and why it ended once Done is
// closed: an error wrapping ErrReleased or ErrLockLost.
func (h *Hold) Err() error {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.err
}

// lifetime returns the context that is cancelled, with the lock's Err as
// its cause, when the lock ends. It is made on first use.
func (h *Hold) lifetime() context.Context {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.life != nil {
		return h.life
	}
	h.life, h.cancel = context.WithCancelCause(context.Background())
	switch {
	case h.err != nil:
		h.cancel(h.err)
	case !h.renewed:
		// Nobody refreshes this lock on its own: it ends at Until.
		h.expiry = time.AfterFunc(time.Until(h.Until()), h.expire)
	}
	return h.life
}

// expire ends a lock that is not renewed automatically once its validity
// has run out, unless a Refresh moved Until in the meantime: as lost, or
// as released if it is a record (AsRecord), which its holder meant to
// expire.
func (h *Hold) expire() {
	if left := time.Until(h.Until()); left > 0 {
		h.mu.Lock()
		if h.err == nil {
			h.expiry.Reset(left)
		}
		h.mu.Unlock()
		return
	}
	if h.record {
		h.endRecord()
		return
	}
	h.end(h.lostError("its validity ran out without a refresh"))
}

// endRecord ends a record whose validity ran out, as released.
func (h *Hold) endRecord() {
	if h.end(fmt.Errorf("%w: %s was a record, kept for its ttl", ErrReleased, QuoteKey(h.key))) && h.e.hooks != nil {
		h.e.hooks.RecordEnded(h)
	}
}

// rearm moves the expiry timer after a Refresh moved Until.
func (h *Hold) rearm() {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.expiry != nil && h.err == nil {
		h.expiry.Reset(time.Until(h.Until()))
	}
}

// end records why the lock ended, once: later calls change nothing and
// report false. From then on the Lock does not ask Redis again (its
// methods return ErrNotHeld), Done is closed, and the renewer drops it.
func (h *Hold) end(err error) bool {
	h.mu.Lock()
	if h.err != nil {
		h.mu.Unlock()
		return false
	}
	h.err = err
	h.gone.Store(true)
	if h.cancel != nil {
		h.cancel(err)
	}
	if h.expiry != nil {
		h.expiry.Stop()
	}
	h.mu.Unlock()
	if h.renewed {
		h.e.renewer.Remove((*renewedHold)(h))
	}
	if h.e.hooks != nil {
		h.e.hooks.Ended(h, err)
	}
	return true
}

// lostError returns an error wrapping ErrLockLost that says how.
func (h *Hold) lostError(how string) error {
	return fmt.Errorf("%w: %s: %s", ErrLockLost, QuoteKey(h.key), how)
}

// renewedHold is a Hold as the Engine's renewer sees it (a renew.Holding).
// It is the same memory as the Hold: the conversion costs nothing, and the
// methods the renewer needs stay out of Hold's own.
type renewedHold Hold

func (h *renewedHold) lock() *Hold                              { return (*Hold)(h) }
func (h *renewedHold) Renewal() *renew.State                    { return &h.renewal }
func (h *renewedHold) Until() time.Time                         { return h.lock().Until() }
func (h *renewedHold) TTL() time.Duration                       { return h.lock().currentTTL() }
func (h *renewedHold) SetTTL(ttl time.Duration)                 { h.ttl.Store(int64(ttl)) }
func (h *renewedHold) Extend(sent time.Time, ttl time.Duration) { h.lock().setUntil(sent, ttl) }
func (h *renewedHold) Gone() bool                               { return h.gone.Load() }

func (h *renewedHold) Cap(sent time.Time, ttl time.Duration) {
	l := h.lock()
	l.until.Store(min(l.until.Load(), l.untilOf(sent, ttl)))
}

// ReleaseStoring is door.ReleaseStoring: it releases the lock and stores
// value at key for ttl, in one step, if the lock is still ours. A copy of
// the call that go-redis sends again and that finds the lock gone answers
// nil, as the first copy stored the value; calling it again after an
// unknown outcome returns ErrNotHeld, with Err wrapping ErrReleased.
func (h *Hold) ReleaseStoring(ctx context.Context, key string, value []byte, ttl time.Duration) error {
	switch {
	case h.e.quorum != nil || h.kind != KindLock:
		return fmt.Errorf("%w: ReleaseStoring needs a lock on one Redis deployment", ErrInvalidOption)
	case key == "":
		return fmt.Errorf("%w: ReleaseStoring with an empty key", ErrInvalidKey)
	case slot.Of(key) != slot.Of(h.key):
		return fmt.Errorf("%w: %s is not in the Cluster slot of the lock %s: give both the same hash tag", ErrInvalidKey, QuoteKey(key), QuoteKey(h.key))
	}
	if err := CheckTTL(ttl); err != nil {
		return err
	}
	return h.release(ctx, h.releaseStoringOp(key, value, ttl), ErrReleased)
}

// ReleaseStoringOp is the release of ReleaseStoring: release.lua's ARGV,
// then the value and its ttl; the lock's keys but a guard, then the key to
// store at.
func (h *Hold) releaseStoringOp(key string, value []byte, ttl time.Duration) op {
	o := op{name: "release", keys: append(append(make([]string, 0, 5), h.keys[:4]...), key), onQuorum: (*quorum).release, after: h.stragglers}
	boxed := h.keyArgs[:min(4, len(h.keyArgs))]
	return withMarkedArgs(o, h.kind.release, boxed, h.boxedMarker(), releaseArgv{holder: h.arg, call: h.nextCall(), releaseSetting: h.e.releaseSetting(), value: value, valueTTL: ttl.Milliseconds()})
}

// Lifetime returns the context that is cancelled, with the hold's Err as
// its cause, when the hold ends.
func (h *Hold) Lifetime() context.Context { return h.lifetime() }

// CurrentTTL is the ttl of the acquire or of the last Refresh: the one the
// renewer keeps.
func (h *Hold) CurrentTTL() time.Duration { return h.currentTTL() }

func (h *Hold) releaseOp() op {
	o := releaseOp(h.kind, h.keys, h.keyArgs, h.boxedMarker(), releaseArgv{holder: h.arg, call: h.nextCall(), releaseSetting: h.e.releaseSetting(), limit: h.limit})
	o.after = h.stragglers
	return o
}

func (h *Hold) refreshOp(ttl time.Duration) op {
	o := op{name: "refresh", keys: h.kind.scriptKeys(h.keys), ttl: ttl, after: h.stragglers, onQuorum: (*quorum).refresh}
	return withMarkedArgs(o, h.kind.refresh, h.keyArgs, h.boxedMarker(), refreshArgv{holder: h.refreshArg(), ttl: ttl.Milliseconds()})
}

// refreshArg is how a refresh names the holder (refresh.lua's ARGV[1]): a
// lock on one deployment by its value as its acquire set it,
// "token:since", which the script compares whole before it reads a value
// marked since by its token; other holdings by their name. The value is
// made and boxed once, at the first refresh, so that an acquire that is
// never refreshed allocates nothing for it.
func (h *Hold) refreshArg() any {
	name, ok := h.arg.(string)
	if h.since == 0 || !ok {
		return h.arg
	}
	h.valueOnce.Do(func() { h.value = name + ":" + strconv.FormatInt(h.since, 10) })
	return h.value
}

// releaseAfterOp is the refresh that ends the holding here and keeps it in
// Redis for d (Lock.ReleaseAfter): a release of the holding, numbered as
// one, which leaves the release marker (see refresh.lua).
func (h *Hold) releaseAfterOp(d time.Duration) op {
	o := op{name: "release", keys: h.kind.scriptKeys(h.keys), ttl: d, after: h.stragglers, onQuorum: (*quorum).refresh}
	return withMarkedArgs(o, h.kind.refresh, h.keyArgs, h.boxedMarker(), refreshArgv{holder: h.refreshArg(), ttl: d.Milliseconds(), call: h.nextCall(), markerTTL: h.e.markerTTL})
}

// boxedMarker returns h.marker boxed as a pointer, which allocates
// nothing, or nil if the holding's keys hold its markers.
func (h *Hold) boxedMarker() any {
	if h.marker == "" {
		return nil
	}
	return &h.marker
}

// nextCall returns the number of a new release call of l, boxed: 1 for the
// first. The scripts' release marker records it, so a copy of the call
// that the Redis client sent again tells itself from another call.
// Numbers under 256 box without allocating.
func (h *Hold) nextCall() any { return h.calls.Add(1) }

func (h *Hold) ttlOp() op {
	o := op{name: "ttl", keys: h.kind.scriptKeys(h.keys), after: h.stragglers, onQuorum: (*quorum).ttl}
	return withArgs(o, h.kind.ttl, h.keyArgs, ttlArgv{holder: h.arg})
}

// attempt returns an acquire that l's holding may be taken back with.
func (h *Hold) attempt() attempt {
	return attempt{kind: h.kind, keys: h.keys, keyArgs: h.keyArgs, token: h.token, marker: h.marker, arg: h.arg, ttl: h.currentTTL(), rel: h.e.releaseSetting(), limit: h.limit}
}
