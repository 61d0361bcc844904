package engine

import (
	"context"
	"time"
)

// The entry point of every acquire: one attempt or a waiter, of a hold on
// one name or of a multi-key holding.

// Acquire obtains a hold of kind on the name keys[0] (Keys or HoldKeys),
// for every kind and every entry point: waiting if wait (and not
// cfg.NoWait), else in one attempt. limit is a semaphore's, boxed; nil for
// other kinds. cfg has been checked (see Check). For KindMulti, keys are
// the lock keys that MultiKeys returned.
func (e *Engine) Acquire(ctx context.Context, kind *Kind, keys []string, ttl time.Duration, limit any, wait bool, cfg Config) (*Hold, Seen, error) {
	if kind == KindMulti {
		return e.acquireMulti(ctx, keys, ttl, wait, cfg)
	}
	if !wait || cfg.NoWait {
		h, _, err := e.try(ctx, e.newAttempt(kind, keys, ttl, limit, cfg), cfg)
		return h, Seen{Attempts: 1}, err
	}
	w := waiter{e: e, kind: kind, limit: limit, cfg: cfg, key: keys[0], keys: keys, ttl: ttl}
	h, err := w.obtain(ctx)
	return h, w.seen, err
}
