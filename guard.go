package dlock

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/dlock-go/dlock/internal/slot"
)

// ErrGuarded means an acquire found its guard key (WithGuard) and did not
// take the lock: the work the lock protects is done already. The error is
// a *GuardError, which holds the guard key's value.
var ErrGuarded = errors.New("dlock: guard key exists")

// GuardError is the error of an acquire that found its guard key: it holds
// the key's value, read in the same step. errors.Is(err, ErrGuarded)
// matches it.
type GuardError struct {
	Key   string // the guard key
	Value string // its value when the acquire found it
}

// Error says which guard key the acquire found.
func (e *GuardError) Error() string {
	return fmt.Sprintf("dlock: guard key %s exists: the lock was not taken", quoteKey(e.Key))
}

// Is reports whether target is ErrGuarded.
func (e *GuardError) Is(target error) bool { return target == ErrGuarded }

// WithGuard makes every attempt of the acquire look at key first, in the
// same step: while key exists the lock is not taken, and Obtain, TryObtain
// and Do return a *GuardError (matching ErrGuarded) with key's value. A
// waiter that a release wakes finds the guard its holder stored (see
// Lock.ReleaseStoring), so "run once, then remember the result" costs one
// round trip to find the result, and two to make it: the acquire, and the
// release that stores it.
//
// key must hash to the lock key's Cluster slot (give both the same hash
// tag, as "{order:42}:lock" and "{order:42}:result"), on every deployment,
// so code that works on one server works on a Cluster; otherwise the call
// returns an error wrapping ErrInvalidKey. A guard needs one deployment:
// a Redlock Client refuses it (ErrInvalidOption), as it does for shared
// holds (Semaphore, RWMutex).
func WithGuard(key string) ObtainOption {
	return func(c *obtainConfig) { c.guard = key }
}

// checkGuard validates WithGuard's key for a lock named key.
func (c *Client) checkGuard(key string, cfg obtainConfig) error {
	switch {
	case cfg.guard == "":
		return nil
	case c.quorum != nil:
		return fmt.Errorf("%w: WithGuard needs one Redis deployment; a Redlock quorum cannot read a key and take a lock in one step", ErrInvalidOption)
	case slot.Of(cfg.guard) != slot.Of(key):
		return fmt.Errorf("%w: guard key %s is in Cluster slot %d, the lock %s in %d: give both the same hash tag",
			ErrInvalidKey, quoteKey(cfg.guard), slot.Of(cfg.guard), quoteKey(key), slot.Of(key))
	}
	return nil
}

// ReleaseStoring releases the lock and stores value at key for ttl, in one
// step, if the lock is still ours: the result of the work the lock
// protected, which a caller whose lock expired meanwhile can never write.
// With WithGuard(key), the next acquire finds it and does not take the
// lock. It returns an error wrapping ErrNotHeld, and writes nothing, if the
// lock is not ours any more.
//
// It has one effect whatever go-redis sends again: nil means value is
// stored, also when a copy of the call sent again found the lock gone (the
// first copy stored it), and ErrNotHeld means this call stored nothing. An
// error wrapping ErrOutcomeUnknown means the answer did not come back:
// value is stored or not; calling it again is safe (ErrNotHeld, with Err
// wrapping ErrReleased, if the first call stored it).
//
// key must hash to the lock key's Cluster slot, as for WithGuard. ttl must
// be at least a millisecond. It works for locks of a single deployment:
// on a Redlock Client, and for a semaphore's permit or an RW lock's hold,
// it returns an error wrapping ErrInvalidOption.
func (l *Lock) ReleaseStoring(ctx context.Context, key string, value []byte, ttl time.Duration) error {
	switch {
	case l.client.quorum != nil || l.kind != lockKind:
		return fmt.Errorf("%w: ReleaseStoring needs a lock on one Redis deployment", ErrInvalidOption)
	case key == "":
		return fmt.Errorf("%w: ReleaseStoring with an empty key", ErrInvalidKey)
	case slot.Of(key) != slot.Of(l.key):
		return fmt.Errorf("%w: %s is not in the Cluster slot of the lock %s: give both the same hash tag", ErrInvalidKey, quoteKey(key), quoteKey(l.key))
	}
	if err := checkTTL(ttl); err != nil {
		return err
	}
	return l.release(ctx, l.releaseStoringOp(key, value, ttl), ErrReleased)
}

// releaseStoringOp is the release of ReleaseStoring: release.lua's ARGV,
// then the value and its ttl; the lock's keys but a guard, then the key to
// store at.
func (l *Lock) releaseStoringOp(key string, value []byte, ttl time.Duration) op {
	o := op{name: "release", keys: append(append(make([]string, 0, 5), l.keys[:4]...), key), onQuorum: (*quorum).release, after: l.stragglers}
	boxed := l.keyArgs[:min(4, len(l.keyArgs))]
	rel := l.client.releaseSetting()
	return o.withScript(l.kind.release, boxed, l.arg, "", int64(0), fairLeaseMillis, "", rel.counted, l.nextCall(), rel.markerTTL, value, ttl.Milliseconds())
}
