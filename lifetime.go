package dlock

import (
	"context"
	"fmt"
	"time"
)

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
func (l *Lock) Done() <-chan struct{} {
	return l.lifetime().Done()
}

// Err returns nil while the lock is held, and why it ended once Done is
// closed: an error wrapping ErrReleased after Release or ReleaseAfter, and
// once a record (AsRecord) ran out; or one wrapping ErrLockLost, which says
// how it was lost.
func (l *Lock) Err() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.err
}

// lifetime returns the context that is cancelled, with the lock's Err as
// its cause, when the lock ends. It is made on first use.
func (l *Lock) lifetime() context.Context {
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
func (l *Lock) expire() {
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
func (l *Lock) endRecord() {
	if l.end(fmt.Errorf("%w: %s was a record, kept for its ttl", ErrReleased, quoteKey(l.key))) && l.obs != nil {
		l.observeRecordEnd()
	}
}

// rearm moves the expiry timer after a Refresh moved Until.
func (l *Lock) rearm() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.expiry != nil && l.err == nil {
		l.expiry.Reset(time.Until(l.Until()))
	}
}

// end records why the lock ended, once: later calls change nothing and
// report false. From then on the Lock does not ask Redis again (its
// methods return ErrNotHeld), Done is closed, and the renewer drops it.
func (l *Lock) end(err error) bool {
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
		l.client.renewer.Remove((*renewedLock)(l))
	}
	if l.obs != nil {
		l.observeEnd(err)
	}
	return true
}

// lostError returns an error wrapping ErrLockLost that says how.
func (l *Lock) lostError(how string) error {
	return fmt.Errorf("%w: %s: %s", ErrLockLost, quoteKey(l.key), how)
}
