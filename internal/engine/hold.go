package engine

import (
	"context"
	"fmt"
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
}

// init makes h the Hold that the acquire a obtained, with the fence it got.
// It keeps the acquire's keys and boxed name for its own calls.
func (h *Hold) init(e *Engine, a attempt, fence int64, sent time.Time) {
	h.e, h.kind, h.key, h.token, h.fence = e, a.kind, a.keys[0], a.token, fence
	h.keys, h.keyArgs, h.arg, h.limit = a.keys, a.keyArgs, a.arg, a.limit
	h.ttl.Store(int64(a.ttl))
	h.setUntil(sent, a.ttl)
}

// Kind returns the kind of the holding.
func (l *Hold) Kind() *Kind { return l.kind }

// Renewed reports whether the Engine's renewer refreshes the holding.
func (l *Hold) Renewed() bool { return l.renewed }

// Record reports whether the holding is a record (AsRecord).
func (l *Hold) Record() bool { return l.record }

// Gone reports whether the holding ended.
func (l *Hold) Gone() bool { return l.gone.Load() }

// Engine returns the Engine the holding is on.
func (l *Hold) Engine() *Engine { return l.e }

// Key returns the name of the holding.
func (l *Hold) Key() string { return l.key }

// Token returns the holder's token: its name in Redis (see dlock.Lock.Token).
func (l *Hold) Token() string { return l.token }

// Fence returns the holding's fence; on a Redlock, the quorum hands it
// out at the first call (see fenceRaise and dlock.Lock.Fence).
func (l *Hold) Fence() int64 {
	if l.raise != nil {
		l.raised.Do(func() {
			ctx, cancel := context.WithDeadline(context.Background(), l.Until())
			defer cancel()
			l.fence, _ = l.raise.run(ctx)
		})
	}
	return l.fence
}

// Until returns the holding's conservative deadline: the last acquire or
// refresh's send time plus its ttl, less Drift (see dlock.Lock.Until).
func (l *Hold) Until() time.Time {
	return l.e.epoch.Add(time.Duration(l.until.Load()))
}

// currentTTL is the ttl of the acquire or of the last Refresh: the one the
// renewer keeps.
func (l *Hold) currentTTL() time.Duration { return time.Duration(l.ttl.Load()) }

// until returns the validity deadline of an acquire or refresh sent at sent
// with ttl, in nanoseconds after client.epoch, as kept in l.until.
func (l *Hold) untilOf(sent time.Time, ttl time.Duration) int64 {
	ttl = ttl.Truncate(time.Millisecond)
	return int64(sent.Sub(l.e.epoch) + ttl - Drift(ttl))
}

// setUntil sets the validity deadline of an acquire or refresh sent at sent
// with ttl, of which Redis got the whole milliseconds.
func (l *Hold) setUntil(sent time.Time, ttl time.Duration) {
	l.until.Store(l.untilOf(sent, ttl))
}

// Release releases the holding if it is still ours; see dlock.Lock.Release.
func (l *Hold) Release(ctx context.Context) error {
	return l.release(ctx, l.releaseOp(), ErrReleased)
}

// release sends o, which ends l's holding in Redis (Release,
// ReleaseStoring, ReleaseAfter), and ends l with released if it did, as
// lost if it found the lock gone.
func (l *Hold) release(ctx context.Context, o op, released error) (err error) {
	if err := l.check("release"); err != nil {
		return err
	}
	if l.renewed {
		// No automatic refresh may be on its way: landing after o, it would
		// find the lock gone and end it as lost (a release), or set the old
		// ttl back (ReleaseAfter).
		if l.e.renewer.Pause(ctx, (*renewedHold)(l)) != nil {
			return fmt.Errorf("dlock: release %s: %w", QuoteKey(l.key), contextError(ctx))
		}
	}
	r, err := l.e.call(ctx, o)
	if err != nil {
		if l.renewed {
			l.e.renewer.Resume((*renewedHold)(l))
		}
		return err
	}
	switch r.code {
	case ours:
		l.end(released)
		return nil
	case releasedBefore:
		l.end(ErrReleased) // if the other call has not yet: it will say the same
		return l.notHeld("release")
	}
	l.end(l.lostError("release found it gone or taken"))
	return l.notHeld("release")
}

// ReleaseAfter ends the holding here and keeps it in Redis for d; see
// dlock.Lock.ReleaseAfter.
func (l *Hold) ReleaseAfter(ctx context.Context, d time.Duration) error {
	if d < time.Millisecond {
		return l.Release(ctx)
	}
	return l.release(ctx, l.releaseAfterOp(d), fmt.Errorf("%w: %s is kept for %v, then it expires", ErrReleased, QuoteKey(l.key), d))
}

// Refresh sets the holding's time to live to ttl if it is still ours; see
// dlock.Lock.Refresh.
func (l *Hold) Refresh(ctx context.Context, ttl time.Duration) (err error) {
	if err := CheckTTL(ttl); err != nil {
		return err
	}
	if err := l.check("refresh"); err != nil {
		return err
	}
	sent := time.Now()
	r, err := l.e.call(ctx, l.refreshOp(ttl))
	if err != nil {
		return err
	}
	switch r.code {
	case ours:
	case releasedBefore:
		l.end(ErrReleased) // by a release of this Lock, at the same time
		return l.notHeld("refresh")
	default:
		l.end(l.lostError("refresh found it gone or taken"))
		return l.notHeld("refresh")
	}
	if l.renewed {
		l.e.renewer.Refreshed((*renewedHold)(l), sent, ttl)
		return nil
	}
	l.ttl.Store(int64(ttl))
	l.setUntil(sent, ttl)
	l.rearm()
	return nil
}

// TTL returns the holding's time to live as Redis reports it; see
// dlock.Lock.TTL.
func (l *Hold) TTL(ctx context.Context) (time.Duration, error) {
	if err := l.check("ttl"); err != nil {
		return 0, err
	}
	r, err := l.e.call(ctx, l.ttlOp())
	switch {
	case err != nil:
		return 0, err
	case r.code != ours:
		l.end(l.lostError("ttl found it gone or taken"))
		return 0, l.notHeld("ttl")
	case r.value < 0:
		return -1, nil
	}
	return time.Duration(r.value) * time.Millisecond, nil
}

// check returns the error of an operation that need not ask Redis.
func (l *Hold) check(op string) error {
	if err := l.e.Usable(); err != nil {
		return err
	}
	if l.gone.Load() {
		return l.notHeld(op)
	}
	return nil
}

func (l *Hold) notHeld(op string) error {
	return fmt.Errorf("%w: %s %s: the lock is not ours any more", ErrNotHeld, op, QuoteKey(l.key))
}

// Done returns a channel closed when the holding ends; see
// dlock.Lock.Done. The first call sets it up.
func (l *Hold) Done() <-chan struct{} {
	return l.lifetime().Done()
}

// Err returns nil while the holding lasts, and why it ended once Done is
// closed: an error wrapping ErrReleased or ErrLockLost.
func (l *Hold) Err() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.err
}

// lifetime returns the context that is cancelled, with the lock's Err as
// its cause, when the lock ends. It is made on first use.
func (l *Hold) lifetime() context.Context {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.life != nil {
		return l.life
	}
	l.life, l.cancel = context.WithCancelCause(context.Background())
	switch {
	case l.err != nil:
		l.cancel(l.err)
	case !l.renewed:
		// Nobody refreshes this lock on its own: it ends at Until.
		l.expiry = time.AfterFunc(time.Until(l.Until()), l.expire)
	}
	return l.life
}

// expire ends a lock that is not renewed automatically once its validity
// has run out, unless a Refresh moved Until in the meantime: as lost, or
// as released if it is a record (AsRecord), which its holder meant to
// expire.
func (l *Hold) expire() {
	if left := time.Until(l.Until()); left > 0 {
		l.mu.Lock()
		if l.err == nil {
			l.expiry.Reset(left)
		}
		l.mu.Unlock()
		return
	}
	if l.record {
		l.endRecord()
		return
	}
	l.end(l.lostError("its validity ran out without a refresh"))
}

// endRecord ends a record whose validity ran out, as released.
func (l *Hold) endRecord() {
	if l.end(fmt.Errorf("%w: %s was a record, kept for its ttl", ErrReleased, QuoteKey(l.key))) && l.e.hooks != nil {
		l.e.hooks.RecordEnded(l)
	}
}

// rearm moves the expiry timer after a Refresh moved Until.
func (l *Hold) rearm() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.expiry != nil && l.err == nil {
		l.expiry.Reset(time.Until(l.Until()))
	}
}

// end records why the lock ended, once: later calls change nothing and
// report false. From then on the Lock does not ask Redis again (its
// methods return ErrNotHeld), Done is closed, and the renewer drops it.
func (l *Hold) end(err error) bool {
	l.mu.Lock()
	if l.err != nil {
		l.mu.Unlock()
		return false
	}
	l.err = err
	l.gone.Store(true)
	if l.cancel != nil {
		l.cancel(err)
	}
	if l.expiry != nil {
		l.expiry.Stop()
	}
	l.mu.Unlock()
	if l.renewed {
		l.e.renewer.Remove((*renewedHold)(l))
	}
	if l.e.hooks != nil {
		l.e.hooks.Ended(l, err)
	}
	return true
}

// lostError returns an error wrapping ErrLockLost that says how.
func (l *Hold) lostError(how string) error {
	return fmt.Errorf("%w: %s: %s", ErrLockLost, QuoteKey(l.key), how)
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
func (l *Hold) ReleaseStoring(ctx context.Context, key string, value []byte, ttl time.Duration) error {
	switch {
	case l.e.quorum != nil || l.kind != KindLock:
		return fmt.Errorf("%w: ReleaseStoring needs a lock on one Redis deployment", ErrInvalidOption)
	case key == "":
		return fmt.Errorf("%w: ReleaseStoring with an empty key", ErrInvalidKey)
	case slot.Of(key) != slot.Of(l.key):
		return fmt.Errorf("%w: %s is not in the Cluster slot of the lock %s: give both the same hash tag", ErrInvalidKey, QuoteKey(key), QuoteKey(l.key))
	}
	if err := CheckTTL(ttl); err != nil {
		return err
	}
	return l.release(ctx, l.releaseStoringOp(key, value, ttl), ErrReleased)
}

// ReleaseStoringOp is the release of ReleaseStoring: release.lua's ARGV,
// then the value and its ttl; the lock's keys but a guard, then the key to
// store at.
func (l *Hold) releaseStoringOp(key string, value []byte, ttl time.Duration) op {
	o := op{name: "release", keys: append(append(make([]string, 0, 5), l.keys[:4]...), key), onQuorum: (*quorum).release, after: l.stragglers}
	boxed := l.keyArgs[:min(4, len(l.keyArgs))]
	return withArgs(o, l.kind.release, boxed, releaseArgv{holder: l.arg, call: l.nextCall(), releaseSetting: l.e.releaseSetting(), value: value, valueTTL: ttl.Milliseconds()})
}

// Lifetime returns the context that is cancelled, with the hold's Err as
// its cause, when the hold ends.
func (l *Hold) Lifetime() context.Context { return l.lifetime() }

// CurrentTTL is the ttl of the acquire or of the last Refresh: the one the
// renewer keeps.
func (l *Hold) CurrentTTL() time.Duration { return l.currentTTL() }

func (l *Hold) releaseOp() op {
	o := releaseOp(l.kind, l.keys, l.keyArgs, releaseArgv{holder: l.arg, call: l.nextCall(), releaseSetting: l.e.releaseSetting(), limit: l.limit})
	o.after = l.stragglers
	return o
}

func (l *Hold) refreshOp(ttl time.Duration) op {
	o := op{name: "refresh", keys: l.kind.scriptKeys(l.keys), ttl: ttl, after: l.stragglers, onQuorum: (*quorum).refresh}
	return withArgs(o, l.kind.refresh, l.keyArgs, refreshArgv{holder: l.arg, ttl: ttl.Milliseconds()})
}

// releaseAfterOp is the refresh that ends the holding here and keeps it in
// Redis for d (Lock.ReleaseAfter): a release of the holding, numbered as
// one, which leaves the release marker (see refresh.lua).
func (l *Hold) releaseAfterOp(d time.Duration) op {
	o := op{name: "release", keys: l.kind.scriptKeys(l.keys), ttl: d, after: l.stragglers, onQuorum: (*quorum).refresh}
	return withArgs(o, l.kind.refresh, l.keyArgs, refreshArgv{holder: l.arg, ttl: d.Milliseconds(), call: l.nextCall(), markerTTL: l.e.markerTTL})
}

// nextCall returns the number of a new release call of l, boxed: 1 for the
// first. The scripts' release marker records it, so a copy of the call
// that the Redis client sent again tells itself from another call.
// Numbers under 256 box without allocating.
func (l *Hold) nextCall() any { return l.calls.Add(1) }

func (l *Hold) ttlOp() op {
	o := op{name: "ttl", keys: l.kind.scriptKeys(l.keys), after: l.stragglers, onQuorum: (*quorum).ttl}
	return withArgs(o, l.kind.ttl, l.keyArgs, ttlArgv{holder: l.arg})
}

// attempt returns an acquire that l's holding may be taken back with.
func (l *Hold) attempt() attempt {
	return attempt{kind: l.kind, keys: l.keys, keyArgs: l.keyArgs, token: l.token, arg: l.arg, ttl: l.currentTTL(), rel: l.e.releaseSetting(), limit: l.limit}
}
