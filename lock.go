package dlock

import (
	"context"
	"time"

	"github.com/dlock-go/dlock/internal/engine"
	"github.com/dlock-go/dlock/observe"
)

// Lock is a lock obtained from a Client. It is safe for concurrent use.
//
// Holding a Lock is never a guarantee: the lock expires when its time to live
// runs out, and Redis can lose it (a restart without persistence, a failover).
// Use Until to stop work in time, Refresh to extend it, and Fence to let the
// protected resource reject a holder that lost the lock without knowing it.
type Lock struct {
	h   engine.Hold // the holding in Redis, and its end
	obs *lockObs    // WithObserver: set before the Lock is shared; nil without one
}

// lockOf returns the Lock that h is part of; nil for none.
func lockOf(h *engine.Hold) *Lock {
	if h == nil {
		return nil
	}
	return h.Owner.(*Lock)
}

// Key returns the name of the lock, as given to Obtain; for a Lock of
// ObtainMulti, the first of its keys in sorted order.
func (l *Lock) Key() string { return l.h.Key() }

// Token returns the random value that identifies this holder: 128 bits from
// crypto/rand, URL-safe base64, followed by the holder's name (see
// WithHolderName) and the lock's value, if it was obtained WithValue. The
// lock's key holds it in Redis while the lock is ours: on one deployment
// followed by a colon and the server's time of the acquire in microseconds
// (and ":w" while someone waits for the lock); on a Redlock node alone. It
// has no colon. Treat it as a secret: whoever knows it can release the lock.
func (l *Lock) Token() string { return l.h.Token() }

// Fingerprint returns this holder's fingerprint: what LockInfo.Fingerprint
// shows, in Inspect, Scan and the CLI's status and list, while the lock is
// ours. It is no secret, unlike Token: log it, to match a holder to what an
// operator sees.
func (l *Lock) Fingerprint() string { return engine.Fingerprint(l.h.Token()) }

// Fence returns the fencing token of this holding: a number strictly larger
// than that of every earlier holder of the same key, also across the key's
// expiry and across a restart of Redis without persistence, as long as the
// server's clock does not step backwards (it is at least the server's time in
// microseconds). Pass it to the protected resource, and have the resource
// refuse any write with a fence lower than one it has seen (package fence
// does that).
//
// A lock's fence (Obtain, TryObtain, Do) is handed out by Redis at the
// first call of Fence, in one round trip that waits at most until Until, so
// a lock whose holder never asks for it costs Redis nothing for it. Call
// Fence while the lock is held, before the work it guards: once the lock is
// lost, the first call returns 0. On a Redlock Client (NewRedlock), the
// first call has the nodes where the lock is still ours hand out fences,
// takes the largest of a quorum of them, and stores it on those that
// handed out less, in two rounds that wait at most the node timeout each:
// only once a quorum holds it is it larger than any later holder's. If that
// fails (the lock is lost, or too many nodes fail), Fence returns 0, which
// a resource that checks fences rejects. Later calls return the same. The
// holdings of a semaphore, an RW lock and ObtainMulti get their fence with
// the acquire.
func (l *Lock) Fence() int64 { return l.h.Fence() }

// Until returns a conservative deadline of the lock: the time the last
// successful acquire or refresh was sent, plus its ttl, less a drift margin
// of one percent of the ttl plus two milliseconds, as in the Redlock
// algorithm: it covers clock drift between the client and Redis and the
// time Redis takes to act. Work that must be protected by the lock should be done
// before it. For a ttl of a few milliseconds it can already be past.
func (l *Lock) Until() time.Time { return l.h.Until() }

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
func (l *Lock) Release(ctx context.Context) (err error) {
	if l.obs != nil {
		ctx = l.startCall(ctx, observe.EventRelease)
		defer l.observeRelease(ctx, time.Now(), &err)
	}
	return l.h.Release(ctx)
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
func (l *Lock) ReleaseAfter(ctx context.Context, d time.Duration) (err error) {
	if l.obs != nil {
		ctx = l.startCall(ctx, observe.EventRelease)
		defer l.observeRelease(ctx, time.Now(), &err)
	}
	return l.h.ReleaseAfter(ctx, d)
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
	if err := engine.CheckTTL(ttl); err != nil {
		return err
	}
	if l.obs != nil {
		ctx = l.startCall(ctx, observe.EventRefresh)
		defer l.observeRefresh(ctx, time.Now(), &err)
	}
	return l.h.Refresh(ctx, ttl)
}

// TTL returns the lock's remaining time to live as Redis reports it, or an
// error wrapping ErrNotHeld if the lock is not ours any more. If someone
// removed the key's expiry (PERSIST), it returns -1 (one nanosecond less
// than zero), as go-redis does for keys without expiry.
func (l *Lock) TTL(ctx context.Context) (time.Duration, error) { return l.h.TTL(ctx) }

// Done returns a channel that is closed when the lock ends: when Release
// or ReleaseAfter released it, or when it is lost. Err then tells which.
//
// A lock is lost when a Refresh, TTL or Release finds it gone or taken, when
// an automatic refresh (WithAutoRenew) does, or when the lock's validity
// (Until) runs out before a refresh got through. Without auto-renew, Done
// closes at Until unless Refresh moved it; a record (AsRecord) then ends as
// released, not lost. Done closes no later than shortly after Until, which
// is ahead of the key's expiry in Redis by the drift margin (see Until).
//
// The first call of Done sets up the channel; a Lock on which Done is never
// called costs nothing for it.
func (l *Lock) Done() <-chan struct{} { return l.h.Done() }

// Err returns nil while the lock is held, and why it ended once Done is
// closed: an error wrapping ErrReleased after Release or ReleaseAfter, and
// once a record (AsRecord) ran out; or one wrapping ErrLockLost, which says
// how it was lost.
func (l *Lock) Err() error { return l.h.Err() }
