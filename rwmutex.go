package dlock

import (
	"context"
	"time"
)

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
		m.keys = holdKeys(name)
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
	return m.acquire(ctx, readKind, ttl, true, opts)
}

// TryRLock makes one attempt to take a read hold for ttl: ErrNotObtained
// when a writer holds the lock or waits for it.
func (m *RWMutex) TryRLock(ctx context.Context, ttl time.Duration, opts ...ObtainOption) (*Lock, error) {
	return m.acquire(ctx, readKind, ttl, false, opts)
}

// Lock takes the write hold for ttl, waiting while anyone holds the lock,
// until ctx is done, as Client.Obtain waits. While it waits, new readers
// wait too.
func (m *RWMutex) Lock(ctx context.Context, ttl time.Duration, opts ...ObtainOption) (*Lock, error) {
	return m.acquire(ctx, writeKind, ttl, true, opts)
}

// TryLock makes one attempt to take the write hold for ttl: ErrNotObtained
// when anyone holds the lock.
func (m *RWMutex) TryLock(ctx context.Context, ttl time.Duration, opts ...ObtainOption) (*Lock, error) {
	return m.acquire(ctx, writeKind, ttl, false, opts)
}

// RDo runs fn under a read hold, and Do under the write hold, as Client.Do
// runs a function under a lock.
func (m *RWMutex) RDo(ctx context.Context, ttl time.Duration, fn func(ctx context.Context) error, opts ...DoOption) error {
	return m.do(ctx, readKind, ttl, fn, opts)
}

// Do runs fn under the write hold, as Client.Do runs a function under a
// lock.
func (m *RWMutex) Do(ctx context.Context, ttl time.Duration, fn func(ctx context.Context) error, opts ...DoOption) error {
	return m.do(ctx, writeKind, ttl, fn, opts)
}

func (m *RWMutex) do(ctx context.Context, kind *holdKind, ttl time.Duration, fn func(ctx context.Context) error, opts []DoOption) (err error) {
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

func (m *RWMutex) acquire(ctx context.Context, kind *holdKind, ttl time.Duration, wait bool, opts []ObtainOption) (*Lock, error) {
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
	opts = append(opts[:len(opts):len(opts)], func(c *obtainConfig) { c.fair = false })
	cfg, err := m.c.check(m.name, ttl, opts)
	cfg.fair = m.c.quorum == nil
	return cfg, err
}
