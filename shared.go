package dlock

import (
	"context"
	"fmt"
	"time"
)

// The kinds of the shared holds: a semaphore's permits, an RW lock's read
// and write holds. One family of scripts serves them all (hold_*.lua): the
// holders of a name live in one sorted set, scored by when each expires,
// and the first letter of a holder's name there tells its kind.
var (
	semaphoreKind = sharedKind("semaphore", "s")
	readKind      = sharedKind("read", "r")
	writeKind     = sharedKind("write", "w")
)

func sharedKind(name, class string) *holdKind {
	return &holdKind{
		name:         name,
		queueAcquire: holdAcquireScript,
		release:      holdReleaseScript,
		refresh:      holdRefreshScript,
		ttl:          holdTTLScript,
		raiseFence:   holdRaiseFenceScript,
		class:        class,
	}
}

// acquireHold obtains a shared hold of kind on the name keys[0]: waiting
// as Obtain does if wait, else in one attempt as TryObtain. limit is a
// semaphore's, boxed; fair makes the waiters take turns (see WithFair).
func (c *Client) acquireHold(ctx context.Context, kind *holdKind, keys []string, ttl time.Duration, limit any, wait bool, cfg obtainConfig) (*Lock, error) {
	if cfg.guard != "" {
		return nil, fmt.Errorf("%w: WithGuard is for locks, not a %s", ErrInvalidOption, kind.noun())
	}
	return c.acquire(ctx, kind, keys, ttl, limit, wait, cfg)
}
