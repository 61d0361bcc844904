package dlock

import (
	"context"
	"fmt"
	"time"
)

// Semaphore lets at most a limit of holders at once hold one of its
// permits, across every Client that shares its name: at most N workers on
// a rate-limited API, at most N exports at a time. Make one with
// Client.Semaphore; it is safe for concurrent use.
//
// A permit is a *Lock: Release, Refresh, TTL, Until, Done, Err, Fence and
// WithAutoRenew work as for a lock, and its Fence is strictly larger than
// that of every permit acquired before it from the same semaphore. At no
// instant do more than the limit of unexpired permits exist in Redis; a
// permit whose holder crashed lapses after its ttl, which the next acquire
// or release finds (no sweeper process).
//
// Every Client must use the same limit for one name: an acquire with
// another limit while permits are held fails with ErrLimitMismatch, and
// once none is held, the next acquire's limit counts.
//
// A semaphore's keys are a sorted set under its name and side keys next to
// it, in its Cluster slot (see the package documentation); a lock or an RW
// lock of the same name is refused with ErrWrongType.
type Semaphore struct {
	c     *Client
	name  string
	limit int
	arg   any // limit, boxed once for the scripts
	keys  []string
	err   error
}

// Semaphore returns the semaphore named name with at most limit permits
// held at once. It does not talk to Redis. A limit under 1 is no panic:
// every acquire then returns an error wrapping ErrInvalidOption. On a
// Redlock Client (NewRedlock), only a limit of 1 is safe, and a larger one
// is refused the same way: two majorities of the nodes can each see room
// for a permit on the nodes they reach (see docs/safety.md).
func (c *Client) Semaphore(name string, limit int) *Semaphore {
	s := &Semaphore{c: c, name: name, limit: limit, arg: int64(limit)}
	switch {
	case limit < 1:
		s.err = fmt.Errorf("%w: semaphore %s with a limit of %d; it must be at least 1", ErrInvalidOption, quoteKey(name), limit)
	case limit > 1 && c.quorum != nil:
		s.err = fmt.Errorf("%w: semaphore %s with a limit of %d on a Redlock quorum: only a limit of 1 is safe there (see docs/safety.md)", ErrInvalidOption, quoteKey(name), limit)
	case name != "":
		s.keys = holdKeys(name)
	}
	return s
}

// Name returns the semaphore's name, as given to Client.Semaphore.
func (s *Semaphore) Name() string { return s.name }

// Limit returns how many permits may be held at once.
func (s *Semaphore) Limit() int { return s.limit }

// Acquire acquires a permit for ttl, waiting while all are held, until ctx
// is done, as Client.Obtain waits for a lock: woken by a release, not by
// polling, and with WithFair in arrival order. Each release wakes as many
// waiters as it frees permits. When ctx ends while the permits are taken,
// the error matches both ErrNotObtained and the context's error.
//
// It takes the options of Obtain: WithAutoRenew, WithBackoff, WithFair,
// WithValue. TryAcquire makes one attempt.
func (s *Semaphore) Acquire(ctx context.Context, ttl time.Duration, opts ...ObtainOption) (*Lock, error) {
	cfg, err := s.check(ttl, opts)
	if err != nil {
		return nil, err
	}
	return s.c.acquireHold(ctx, semaphoreKind, s.keys, ttl, s.arg, true, cfg)
}

// TryAcquire makes one attempt to acquire a permit for ttl. When all are
// held, the error wraps ErrNotObtained and it does not wait.
func (s *Semaphore) TryAcquire(ctx context.Context, ttl time.Duration, opts ...ObtainOption) (*Lock, error) {
	cfg, err := s.check(ttl, opts)
	if err != nil {
		return nil, err
	}
	return s.c.acquireHold(ctx, semaphoreKind, s.keys, ttl, s.arg, false, cfg)
}

// Do acquires a permit for ttl, runs fn while holding it, and releases it
// when fn returns, as Client.Do does with a lock: renewed while fn runs,
// fn's context cancelled the moment the permit is lost, WithoutWait and
// WithMinHold as there.
func (s *Semaphore) Do(ctx context.Context, ttl time.Duration, fn func(ctx context.Context) error, opts ...DoOption) (err error) {
	if fn == nil {
		return ErrNilFunc
	}
	if s.err != nil {
		return s.err
	}
	cfg, err := s.c.check(s.name, ttl, doObtainOptions(opts))
	if err != nil {
		return err
	}
	if s.c.obs != nil {
		ctx = s.c.startDo(ctx, semaphoreKind, s.name)
		defer s.c.observeDo(ctx, semaphoreKind, s.name, time.Now(), &err)
	}
	return s.c.holdWhile(ctx, cfg, fn, func() (*Lock, error) {
		return s.c.acquireHold(ctx, semaphoreKind, s.keys, ttl, s.arg, true, cfg)
	})
}

func (s *Semaphore) check(ttl time.Duration, opts []ObtainOption) (obtainConfig, error) {
	if s.err != nil {
		return obtainConfig{}, s.err
	}
	return s.c.check(s.name, ttl, opts)
}
