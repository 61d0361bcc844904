package dlock

import (
	"context"
	"fmt"
	"time"

	"github.com/dlock-go/dlock/internal/engine"
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
		s.err = fmt.Errorf("%w: semaphore %s with a limit of %d; it must be at least 1", ErrInvalidOption, engine.QuoteKey(name), limit)
	case limit > 1 && c.e != nil && c.e.Redlock():
		s.err = fmt.Errorf("%w: semaphore %s with a limit of %d on a Redlock quorum: only a limit of 1 is safe there (see docs/safety.md)", ErrInvalidOption, engine.QuoteKey(name), limit)
	case name != "":
		s.keys = engine.HoldKeys(name)
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
	return s.c.acquireHold(ctx, engine.KindSemaphore, s.keys, ttl, s.arg, true, cfg)
}

// TryAcquire makes one attempt to acquire a permit for ttl. When all are
// held, the error wraps ErrNotObtained and it does not wait.
func (s *Semaphore) TryAcquire(ctx context.Context, ttl time.Duration, opts ...ObtainOption) (*Lock, error) {
	cfg, err := s.check(ttl, opts)
	if err != nil {
		return nil, err
	}
	return s.c.acquireHold(ctx, engine.KindSemaphore, s.keys, ttl, s.arg, false, cfg)
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
		ctx = s.c.startDo(ctx, engine.KindSemaphore, s.name)
		defer s.c.observeDo(ctx, engine.KindSemaphore, s.name, time.Now(), &err)
	}
	return s.c.holdWhile(ctx, cfg, fn, func() (*Lock, error) {
		return s.c.acquireHold(ctx, engine.KindSemaphore, s.keys, ttl, s.arg, true, cfg)
	})
}

func (s *Semaphore) check(ttl time.Duration, opts []ObtainOption) (obtainConfig, error) {
	if s.err != nil {
		return obtainConfig{}, s.err
	}
	return s.c.check(s.name, ttl, opts)
}

// RWMutex is a read-write lock: many readers at once, or one writer, across
// every Client that shares its name. Make one with Client.RWMutex; it is
// safe for concurrent use.
//
// A waiting writer keeps new readers out, so a steady stream of readers
// cannot starve it: once a writer waits, readers that come later wait for
// it, and it gets the lock when the readers before it have released. When
// a writer releases, the readers that queued up behind it get their holds
// together, up to the next waiting writer. Waiters are woken by the
// releases that let them in, not by polling.
//
// Each hold is a *Lock with its own ttl: Release, Refresh, TTL, Until,
// Done, Err, Fence and WithAutoRenew work as for a lock, and every hold's
// Fence, read or write, is larger than that of every hold taken before it.
// A reader's hold expires on its own, so a crashed reader holds the writer
// up no longer than its ttl.
//
// An RW lock's keys are a sorted set under its name and side keys next to
// it, in its Cluster slot; a lock or a semaphore of the same name is
// refused with ErrWrongType. On a Redlock Client both sides are safe on a
// majority of the nodes, as a lock is: any two majorities share a node,
// and there a writer and any other holder exclude each other.
type RWMutex struct {
	c    *Client
	name string
	keys []string
}

// RWMutex returns the read-write lock named name. It does not talk to
// Redis.
func (c *Client) RWMutex(name string) *RWMutex {
	m := &RWMutex{c: c, name: name}
	if name != "" {
		m.keys = engine.HoldKeys(name)
	}
	return m
}

// Name returns the RW lock's name, as given to Client.RWMutex.
func (m *RWMutex) Name() string { return m.name }

// RLock takes a read hold for ttl, waiting while a writer holds or waits,
// until ctx is done, as Client.Obtain waits. It takes the options of
// Obtain; WithFair changes nothing, as the waiters of an RW lock always
// take turns in arrival order.
func (m *RWMutex) RLock(ctx context.Context, ttl time.Duration, opts ...ObtainOption) (*Lock, error) {
	return m.acquire(ctx, engine.KindRead, ttl, true, opts)
}

// TryRLock makes one attempt to take a read hold for ttl: ErrNotObtained
// when a writer holds the lock or waits for it.
func (m *RWMutex) TryRLock(ctx context.Context, ttl time.Duration, opts ...ObtainOption) (*Lock, error) {
	return m.acquire(ctx, engine.KindRead, ttl, false, opts)
}

// Lock takes the write hold for ttl, waiting while anyone holds the lock,
// until ctx is done, as Client.Obtain waits. While it waits, new readers
// wait too.
func (m *RWMutex) Lock(ctx context.Context, ttl time.Duration, opts ...ObtainOption) (*Lock, error) {
	return m.acquire(ctx, engine.KindWrite, ttl, true, opts)
}

// TryLock makes one attempt to take the write hold for ttl: ErrNotObtained
// when anyone holds the lock.
func (m *RWMutex) TryLock(ctx context.Context, ttl time.Duration, opts ...ObtainOption) (*Lock, error) {
	return m.acquire(ctx, engine.KindWrite, ttl, false, opts)
}

// RDo runs fn under a read hold, and Do under the write hold, as Client.Do
// runs a function under a lock.
func (m *RWMutex) RDo(ctx context.Context, ttl time.Duration, fn func(ctx context.Context) error, opts ...DoOption) error {
	return m.do(ctx, engine.KindRead, ttl, fn, opts)
}

// Do runs fn under the write hold, as Client.Do runs a function under a
// lock.
func (m *RWMutex) Do(ctx context.Context, ttl time.Duration, fn func(ctx context.Context) error, opts ...DoOption) error {
	return m.do(ctx, engine.KindWrite, ttl, fn, opts)
}

func (m *RWMutex) do(ctx context.Context, kind *engine.Kind, ttl time.Duration, fn func(ctx context.Context) error, opts []DoOption) (err error) {
	if fn == nil {
		return ErrNilFunc
	}
	cfg, err := m.config(ttl, doObtainOptions(opts))
	if err != nil {
		return err
	}
	if m.c.obs != nil {
		ctx = m.c.startDo(ctx, kind, m.name)
		defer m.c.observeDo(ctx, kind, m.name, time.Now(), &err)
	}
	return m.c.holdWhile(ctx, cfg, fn, func() (*Lock, error) {
		return m.c.acquireHold(ctx, kind, m.keys, ttl, nil, true, cfg)
	})
}

func (m *RWMutex) acquire(ctx context.Context, kind *engine.Kind, ttl time.Duration, wait bool, opts []ObtainOption) (*Lock, error) {
	cfg, err := m.config(ttl, opts)
	if err != nil {
		return nil, err
	}
	return m.c.acquireHold(ctx, kind, m.keys, ttl, nil, wait, cfg)
}

// config reads the options of an acquire. The waiters of an RW lock on
// one deployment always queue as fair ones, whom a release hands their
// holds; WithFair changes nothing, on a Redlock either.
func (m *RWMutex) config(ttl time.Duration, opts []ObtainOption) (obtainConfig, error) {
	opts = append(opts[:len(opts):len(opts)], func(c *obtainConfig) { c.Fair = false })
	cfg, err := m.c.check(m.name, ttl, opts)
	cfg.Fair = m.c.e != nil && !m.c.e.Redlock()
	return cfg, err
}

// acquireHold obtains a shared hold of kind on the name keys[0]: waiting
// as Obtain does if wait, else in one attempt as TryObtain. limit is a
// semaphore's, boxed; fair makes the waiters take turns (see WithFair).
func (c *Client) acquireHold(ctx context.Context, kind *engine.Kind, keys []string, ttl time.Duration, limit any, wait bool, cfg obtainConfig) (*Lock, error) {
	if cfg.Guard != "" {
		return nil, fmt.Errorf("%w: WithGuard is for locks, not a %s", ErrInvalidOption, kind.Noun())
	}
	return c.acquire(ctx, kind, keys, ttl, limit, wait, cfg)
}
