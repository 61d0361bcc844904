package dlock

import (
	"context"
	"fmt"
	"time"

	"github.com/dlock-go/dlock/internal/slot"
)

// withGuard is door.WithGuard: every attempt of the acquire looks at key
// first, in the same step, and does not take the lock while key exists.
func withGuard(key string) ObtainOption {
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

// releaseStoring is door.ReleaseStoring: it releases the lock and stores
// value at key for ttl, in one step, if the lock is still ours. A copy of
// the call that go-redis sends again and that finds the lock gone answers
// nil, as the first copy stored the value; calling it again after an
// unknown outcome returns ErrNotHeld, with Err wrapping ErrReleased.
func (l *Lock) releaseStoring(ctx context.Context, key string, value []byte, ttl time.Duration) error {
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
