package dlock

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/dlock-go/dlock/internal/engine"
	"github.com/dlock-go/dlock/internal/redisclient"
)

// Client obtains locks on one Redis deployment: a single server, a primary
// watched by Sentinel, or a Cluster. It is safe for concurrent use, and many
// goroutines should share one Client.
//
// A Client does not own the Redis client it was given: Close does not close
// it, and it must stay open as long as the Client is used.
type Client struct {
	e      *engine.Engine // nil when err is set
	holder string         // what follows the random part of every token (engine.HolderSuffix)
	obs    *observers     // WithObserver; nil without one (observe.go)
	err    error          // a nil client or bad option given to New; every call returns it
}

// New returns a Client that keeps its locks on rdb: a *redis.Client (also
// from redis.NewFailoverClient for Sentinel) or a *redis.ClusterClient.
//
// New does not talk to Redis. A nil rdb or an invalid option is not a panic:
// every call of the Client then returns the error (ErrNilClient,
// ErrInvalidOption).
//
// New adds a hook to rdb (redis.Hook) that notes its failed dials and
// commands, so that a call whose context ends before Redis answers still
// says why Redis did not: its error matches the context's error and also,
// for errors.Is and errors.As, the last failure rdb met since its last
// successful command (a refused or reset connection, a timeout). Make one
// Client per Redis client and share it: each New adds a hook.
func New(rdb redis.UniversalClient, opts ...Option) *Client {
	cfg, err := newClientConfig(opts)
	c := &Client{holder: engine.HolderSuffix(cfg.holderName), obs: newObservers(cfg.observers), err: err}
	if redisclient.IsNil(rdb) {
		c.err = ErrNilClient
	}
	if c.err == nil {
		c.e = engine.New(rdb, c.engineOptions(cfg))
		c.obs.setNode(c.e)
	}
	return c
}

// NewRedlock returns a Client whose locks live on a quorum of independent
// Redis nodes, as in the Redlock algorithm: a lock is obtained when a
// majority (N/2+1) of the nodes granted it within its validity, and it is
// lost when a majority no longer holds it. The nodes must not replicate one
// another. The Client and its Locks work as with New: Obtain, TryObtain, Do,
// Release, Refresh, TTL, auto-renew, Fence and the wake-ups: a waiter
// listens on enough nodes to share one with any quorum that releases. Fair
// mode (WithFair) needs a single deployment and is refused. Between
// wake-ups, waiters retry after their Backoff's delays, which are random as
// Redlock advises, so rivals fall out of step.
//
// Each round asks all nodes at once and waits for a node at most the node
// timeout (WithNodeTimeout), so a slow or dead minority does not slow an
// acquire down. An acquire is a plain SET NX on each node (pipelined with
// the upkeep of its side key), which does not tell a waiter how long the
// holder has left: between release messages it sleeps its Backoff's
// delays. The fence
// of a Redlock lock is handed out by the quorum at the first Lock.Fence, so
// fences increase across holders whatever quorums they get. See
// docs/safety.md for what Redlock assumes about clocks and restarts.
//
// As New does, NewRedlock adds a hook to each node's client, so that a
// node that had not answered when a round ended is reported with the last
// failure its client met, if any.
//
// NewRedlock returns an error wrapping ErrInvalidOption for an empty node
// list or the same client twice, ErrNilClient for a nil one.
func NewRedlock(nodes []redis.UniversalClient, opts ...Option) (*Client, error) {
	if len(nodes) == 0 {
		return nil, fmt.Errorf("%w: NewRedlock needs at least one node", ErrInvalidOption)
	}
	cfg, err := newClientConfig(opts)
	if err != nil {
		return nil, err
	}
	seen := map[redis.UniversalClient]bool{}
	for i, rdb := range nodes {
		if redisclient.IsNil(rdb) {
			return nil, fmt.Errorf("%w: node %d of NewRedlock", ErrNilClient, i)
		}
		if seen[rdb] {
			return nil, fmt.Errorf("%w: node %d of NewRedlock is given twice", ErrInvalidOption, i)
		}
		seen[rdb] = true
	}
	c := &Client{holder: engine.HolderSuffix(cfg.holderName), obs: newObservers(cfg.observers)}
	c.e = engine.NewQuorum(nodes, c.engineOptions(cfg))
	c.obs.setNode(c.e)
	return c, nil
}

// engineOptions returns what the engine of a Client with cfg is told: its
// Locks are made around its holdings, and the observers are its hooks.
func (c *Client) engineOptions(cfg clientConfig) engine.Options {
	o := engine.Options{Logger: cfg.logger, Ack: cfg.ack, NodeTimeout: cfg.nodeTimeout, NewHold: newHold}
	if c.obs != nil {
		o.Hooks = c.obs
	}
	return o
}

// newHold returns the holding inside a new Lock.
func newHold() *engine.Hold {
	l := new(Lock)
	l.h.Owner = l
	return &l.h
}

// Close waits for the Client's background work to finish, such as the
// release of a lock whose caller stopped waiting for it, and makes later
// calls return ErrClosed. It stops renewing locks: those obtained
// WithAutoRenew end with ErrLockLost. It does not release held locks (they
// expire) and does not close the Redis client. Close always returns nil.
func (c *Client) Close() error {
	if c.e != nil {
		c.e.Close()
	}
	return nil
}

// usable returns the error every call returns on a Client that cannot work.
func (c *Client) usable() error {
	if c.err != nil {
		return c.err
	}
	return c.e.Usable()
}

// checkKey validates the name of a lock, on a Client that can work.
func (c *Client) checkKey(key string) error {
	if err := c.usable(); err != nil {
		return err
	}
	return c.e.CheckKey(key)
}

// logger returns where the Client logs.
func (c *Client) logger() *slog.Logger {
	if c.e == nil {
		return slog.Default()
	}
	return c.e.Logger()
}

// TryObtain makes one attempt to obtain the lock named key for ttl. When
// another holder has it, the error wraps ErrNotObtained and TryObtain does
// not wait.
//
// The key is used as it is; the lock also uses one side key in the same
// Cluster slot (see the package documentation). ttl must be at least one
// millisecond; Redis counts it in whole milliseconds, rounding down.
func (c *Client) TryObtain(ctx context.Context, key string, ttl time.Duration, opts ...ObtainOption) (*Lock, error) {
	cfg, err := c.check(key, ttl, opts)
	if err != nil {
		return nil, err
	}
	return c.acquire(ctx, engine.KindLock, c.e.Keys(key), ttl, nil, false, cfg)
}

// Obtain obtains the lock named key for ttl, waiting while another holder
// has it, until ctx is done. Like sync.Mutex.Lock, but with a context.
//
// A waiter is woken by the release, not by polling: it listens for release
// messages on one Pub/Sub connection that the Client shares among all its
// waiters. On a single deployment the waiters of a lock, of every Client,
// also join a queue kept in Redis next to the lock, and a release wakes
// the first of them only, whichever Client it is in: a release costs one
// attempt, however many wait. Anyone may still take the lock while it is
// free, a newcomer too (unlike WithFair, where waiters take turns); but a
// waiter that was woken and beaten to it gets the lock handed over at the
// next release, so no waiter loses every time. A waiter that dies holds the
// others up little: if its Client's connection is gone the release passes
// it over, and otherwise its place lapses 2s after it was woken (or
// 6s after it last tried). On a Redlock there is no queue, and
// a release wakes every waiter.
//
// A waiter also tries again when the holder's lock expires, and after the
// delays of its Backoff (see WithBackoff), which cover holders that
// release without telling, such as a plain DEL from another library; while
// it listens, those delays are at least 25ms. In the queue, only its first
// waiter keeps to the Backoff; the others try every 2s, to keep their
// place. TryObtain makes one attempt instead.
//
// When ctx ends while another holder has the lock, the error matches both
// ErrNotObtained and the context's error (context.DeadlineExceeded or
// context.Canceled), so a caller can tell "held by someone else" from
// "Redis failed". Obtain waits only for the lock, not for Redis: an error
// from Redis (down, refusing, a key of another type) ends it at once. So
// does Close: a waiting Obtain returns ErrClosed, after leaving the queue.
func (c *Client) Obtain(ctx context.Context, key string, ttl time.Duration, opts ...ObtainOption) (*Lock, error) {
	cfg, err := c.check(key, ttl, opts)
	if err != nil {
		return nil, err
	}
	return c.acquire(ctx, engine.KindLock, c.e.Keys(key), ttl, nil, true, cfg)
}

// check validates the arguments of an obtain on the name key and reads
// its options.
func (c *Client) check(key string, ttl time.Duration, opts []ObtainOption) (obtainConfig, error) {
	if err := c.checkKey(key); err != nil {
		return obtainConfig{}, err
	}
	if err := engine.CheckTTL(ttl); err != nil {
		return obtainConfig{}, err
	}
	cfg, err := newObtainConfig(opts)
	cfg.HolderSuffix = c.holder
	if err == nil {
		err = c.e.CheckConfig(key, cfg.Config)
	}
	return cfg, err
}

// acquire obtains a hold of kind on the name keys[0], for every kind and
// every entry point: waiting as Obtain does if wait (and not a Do with
// WithoutWait), else in one attempt as TryObtain. limit is a semaphore's,
// boxed.
func (c *Client) acquire(ctx context.Context, kind *engine.Kind, keys []string, ttl time.Duration, limit any, wait bool, cfg obtainConfig) (*Lock, error) {
	if c.obs != nil {
		return c.observedObtain(ctx, kind, keys, ttl, limit, wait, cfg)
	}
	h, _, err := c.e.Acquire(ctx, kind, keys, ttl, limit, wait, cfg.Config)
	return lockOf(h), err
}

// WaitRelease waits until the holder of the lock named key, as it is when
// WaitRelease is called, holds it no more, without taking it: it returns
// nil once that holder released it, or its lock expired or was deleted (at
// once if the lock is free), also if another holder has taken it since. It
// returns an error when ctx ends first (wrapping the context's error) or
// Redis fails.
//
// It is woken by the release, as Obtain is, on the Client's Pub/Sub
// connection (on a channel of its own, which the release tells after it
// passed the lock on: waiters do not hear it), and looks at the lock again
// then (one round trip, as Inspect), and when the holder's ttl runs out; it
// does not poll. A holder whose ACL forbids it to publish on that channel
// releases without telling it. A holder
// that releases without telling, such as a plain DEL from another library,
// is seen when its ttl would have run out. Another caller may take the
// lock as soon as it is free: WaitRelease says it was free, not that it
// still is.
func (c *Client) WaitRelease(ctx context.Context, key string) error {
	if err := c.usable(); err != nil {
		return err
	}
	return c.e.WaitRelease(ctx, key, "", defaultBackoff)
}
