package dlock

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/dlock-go/dlock/internal/renew"
	"github.com/dlock-go/dlock/internal/round"
	"github.com/dlock-go/dlock/observe"
)

// Lock is a lock obtained from a Client. It is safe for concurrent use.
//
// Holding a Lock is never a guarantee: the lock expires when its time to live
// runs out, and Redis can lose it (a restart without persistence, a failover).
// Use Until to stop work in time, Refresh to extend it, and Fence to let the
// protected resource reject a holder that lost the lock without knowing it.
type Lock struct {
	client *Client
	kind   *holdKind
	key    string
	token  string
	fence  int64
	keys   []string // the scripts' KEYS, from the acquire
	// the first of keys as the acquire boxed them, for the ARGV of its
	// later calls (see op.withScript)
	keyArgs []any
	arg     any          // the holder's name in Redis, boxed once for the scripts' ARGV (see attempt)
	limit   any          // a semaphore's limit, boxed; nil for other kinds
	ttl     atomic.Int64 // of the acquire or the last Refresh, and of every automatic refresh
	until   atomic.Int64 // validity deadline, nanoseconds after client.epoch
	gone    atomic.Bool  // released, or found not held: no need to ask Redis again
	calls   atomic.Int64 // release calls made so far (see nextCall)

	mu      sync.Mutex
	err     error                   // why the lock ended: ErrReleased or ErrLockLost; nil while held
	life    context.Context         // made by the first Done; cancelled with err
	cancel  context.CancelCauseFunc // of life
	expiry  *time.Timer             // without auto-renew: ends the lock at Until, once life exists
	renewed bool                    // WithAutoRenew: the Client's renewer refreshes it
	record  bool                    // AsRecord: ends as released at Until (set before the Lock is shared)
	raise   *fenceRaise             // Redlock: hands out the fence, on a quorum, at the first Fence
	// Redlock: the acquire's nodes that had not answered; calls to them
	// wait for them (set before the Lock is shared, then only read)
	stragglers *round.Stragglers
	raised     sync.Once
	renewal    renew.State // the renewer's bookkeeping (renewal.go)
	obs        *lockObs    // WithObserver: set before the Lock is shared; nil without one
}

// newLock returns the Lock that the acquire a obtained, with the fence it
// got. It keeps the acquire's keys and boxed name for its own calls.
func (c *Client) newLock(a attempt, fence int64, sent time.Time) *Lock {
	l := &Lock{client: c, kind: a.kind, key: a.keys[0], token: a.token, fence: fence, keys: a.keys, keyArgs: a.keyArgs, arg: a.arg, limit: a.limit}
	l.ttl.Store(int64(a.ttl))
	l.setUntil(sent, a.ttl)
	return l
}

// Key returns the name of the lock, as given to Obtain.
func (l *Lock) Key() string { return l.key }

// Token returns the random value that identifies this holder: 128 bits from
// crypto/rand, URL-safe base64, followed by the holder's name (see
// WithHolderName) and the lock's value, if it was obtained WithValue. The
// lock's key holds it in Redis while the lock is ours. Treat it as a secret:
// whoever knows it can release the lock.
func (l *Lock) Token() string { return l.token }

// Fence returns the fencing token of this holding: a number strictly larger
// than that of every earlier holder of the same key, also across the key's
// expiry and across a restart of Redis without persistence, as long as the
// server's clock does not step backwards (it is at least the server's time in
// microseconds). Pass it to the protected resource, and have the resource
// refuse any write with a fence lower than one it has seen.
//
// On a Redlock Client (NewRedlock), the first call of Fence has the nodes
// where the lock is still ours hand out fences, takes the largest of a
// quorum of them, and stores it on those that handed out less, in two
// rounds that wait at most the node timeout each: only once a quorum holds
// it is it larger than any later holder's. If that fails (the lock is
// lost, or too many nodes fail), Fence returns 0, which a resource that
// checks fences rejects. Later calls return the same.
func (l *Lock) Fence() int64 {
	if l.raise != nil {
		l.raised.Do(func() {
			ctx, cancel := context.WithDeadline(context.Background(), l.Until())
			defer cancel()
			l.fence, _ = l.raise.run(ctx)
		})
	}
	return l.fence
}

// Until returns a conservative deadline of the lock: the time the last
// successful acquire or refresh was sent, plus its ttl, less a drift margin
// of one percent of the ttl plus two milliseconds, as in the Redlock
// algorithm: it covers clock drift between the client and Redis and the
// time Redis takes to act. Work that must be protected by the lock should be done
// before it. For a ttl of a few milliseconds it can already be past.
func (l *Lock) Until() time.Time {
	return l.client.epoch.Add(time.Duration(l.until.Load()))
}

// currentTTL is the ttl of the acquire or of the last Refresh: the one the
// renewer keeps.
func (l *Lock) currentTTL() time.Duration { return time.Duration(l.ttl.Load()) }

// until returns the validity deadline of an acquire or refresh sent at sent
// with ttl, in nanoseconds after client.epoch, as kept in l.until.
func (l *Lock) untilOf(sent time.Time, ttl time.Duration) int64 {
	ttl = ttl.Truncate(time.Millisecond)
	return int64(sent.Sub(l.client.epoch) + ttl - drift(ttl))
}

// setUntil sets the validity deadline of an acquire or refresh sent at sent
// with ttl, of which Redis got the whole milliseconds.
func (l *Lock) setUntil(sent time.Time, ttl time.Duration) {
	l.until.Store(l.untilOf(sent, ttl))
}

// Release releases the lock if it is still ours. It returns an error
// wrapping ErrNotHeld if it is not (it expired, was released, or was taken
// over), and then touches nothing: it never deletes another holder's lock.
//
// Every call has one effect (see docs/safety.md): when go-redis sends the
// release again because its reply was late, the copies find what the first
// did, and Release returns nil if it released the lock, also when the lock
// was taken by another client in between. Of two Release calls of one Lock
// at the same time, one returns nil and the other an error wrapping
// ErrNotHeld; Err then wraps ErrReleased. An error wrapping
// ErrOutcomeUnknown means the answer did not come back (the context ended
// first, or the connection failed): the lock is released or not, and the
// Lock stays as it was, so calling Release again is safe and tells which.
func (l *Lock) Release(ctx context.Context) error {
	return l.release(ctx, l.releaseOp(), ErrReleased)
}

// release sends o, which ends l's holding in Redis (Release,
// ReleaseStoring, ReleaseAfter), and ends l with released if it did, as
// lost if it found the lock gone.
func (l *Lock) release(ctx context.Context, o op, released error) (err error) {
	if l.obs != nil {
		ctx = l.startCall(ctx, observe.EventRelease)
		defer l.observeRelease(ctx, time.Now(), &err)
	}
	if err := l.check("release"); err != nil {
		return err
	}
	if l.renewed {
		// No automatic refresh may be on its way: landing after o, it would
		// find the lock gone and end it as lost (a release), or set the old
		// ttl back (ReleaseAfter).
		if l.client.renewer.Pause(ctx, (*renewedLock)(l)) != nil {
			return fmt.Errorf("dlock: release %s: %w", quoteKey(l.key), contextError(ctx))
		}
	}
	r, err := l.client.call(ctx, o)
	if err != nil {
		if l.renewed {
			l.client.renewer.Resume((*renewedLock)(l))
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

// ReleaseAfter ends the lock here but keeps it in Redis for d: it stops
// renewing it, sets its time to live to d, counted from now, if it is still
// ours, and ends the Lock (Done closes, Err wraps ErrReleased), so that it
// expires d later. Nobody else can take it until then; use it to keep a
// lock after the work is done, as WithMinHold does for Client.Do. A d under
// one millisecond releases the lock at once, as Release.
//
// It returns an error wrapping ErrNotHeld if the lock is not ours any more.
// If Redis fails, it returns the error and the Lock stays as it was,
// renewed if it was. As Release, it has one effect whatever go-redis sends
// again: a copy of the call that comes late does not keep the lock longer.
func (l *Lock) ReleaseAfter(ctx context.Context, d time.Duration) error {
	if d < time.Millisecond {
		return l.Release(ctx)
	}
	return l.release(ctx, l.releaseAfterOp(d), fmt.Errorf("%w: %s is kept for %v, then it expires", ErrReleased, quoteKey(l.key), d))
}

// Refresh sets the lock's time to live to ttl, counted from now, if it is
// still ours, and moves Until accordingly. It returns an error wrapping
// ErrNotHeld if the lock is not ours any more; then it changes nothing,
// and Err wraps ErrLockLost, or ErrReleased if a Release of this Lock at
// the same time released it.
//
// On a lock renewed automatically (WithAutoRenew, Client.Do), ttl is the
// time to live the renewer keeps from then on, a third of it after each
// refresh. If an automatic refresh with the old ttl was on its way at the
// same moment, Until counts from whichever of the two ends the lock first,
// until the renewer has sent the new ttl again, at once.
func (l *Lock) Refresh(ctx context.Context, ttl time.Duration) (err error) {
	if err := checkTTL(ttl); err != nil {
		return err
	}
	if l.obs != nil {
		ctx = l.startCall(ctx, observe.EventRefresh)
		defer l.observeRefresh(ctx, time.Now(), &err)
	}
	if err := l.check("refresh"); err != nil {
		return err
	}
	sent := time.Now()
	r, err := l.client.call(ctx, l.refreshOp(ttl))
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
		l.client.renewer.Refreshed((*renewedLock)(l), sent, ttl)
		return nil
	}
	l.ttl.Store(int64(ttl))
	l.setUntil(sent, ttl)
	l.rearm()
	return nil
}

// TTL returns the lock's remaining time to live as Redis reports it, or an
// error wrapping ErrNotHeld if the lock is not ours any more. If someone
// removed the key's expiry (PERSIST), it returns -1 (one nanosecond less
// than zero), as go-redis does for keys without expiry.
func (l *Lock) TTL(ctx context.Context) (time.Duration, error) {
	if err := l.check("ttl"); err != nil {
		return 0, err
	}
	r, err := l.client.call(ctx, l.ttlOp())
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
func (l *Lock) check(op string) error {
	if err := l.client.usable(); err != nil {
		return err
	}
	if l.gone.Load() {
		return l.notHeld(op)
	}
	return nil
}

func (l *Lock) notHeld(op string) error {
	return fmt.Errorf("%w: %s %s: the lock is not ours any more", ErrNotHeld, op, quoteKey(l.key))
}
