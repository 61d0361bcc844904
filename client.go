package dlock

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/dlock-go/dlock/internal/door"
	"github.com/dlock-go/dlock/internal/owner"
	"github.com/dlock-go/dlock/internal/redisclient"
	"github.com/dlock-go/dlock/internal/renew"
	"github.com/dlock-go/dlock/internal/wake"
)

// Client obtains locks on one Redis deployment: a single server, a primary
// watched by Sentinel, or a Cluster. It is safe for concurrent use, and many
// goroutines should share one Client.
//
// A Client does not own the Redis client it was given: Close does not close
// it, and it must stay open as long as the Client is used.
type Client struct {
	node   *node   // the deployment of a plain Client; nil for Redlock
	quorum *quorum // the nodes of a Redlock Client; nil for a plain one
	nodes  []*node // every node: node, or the quorum's
	logger *slog.Logger
	holder string    // what follows the random part of every token (holderSuffix)
	epoch  time.Time // monotonic origin of the validity deadlines
	err    error     // a nil client or bad option given to New; every call returns it

	renewer renew.Renewer[*renewedLock] // of the locks obtained WithAutoRenew (renewal.go)
	subs    []*wake.Subscriber          // the release messages that wake waiters, one per node
	obs     *observers                  // WithObserver; nil without one (observe_hooks.go)

	own *owner.Group // the goroutines of this Client, which Close stops and waits for

	// markerTTL is how long a release marker lives, boxed milliseconds:
	// longer than the Redis clients go on sending copies of one command
	// (see resendWindow and release.lua)
	markerTTL any
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
	c := &Client{logger: cfg.logger, holder: holderSuffix(cfg.holderName), epoch: time.Now(), err: err, own: owner.New()}
	c.obs = newObservers(cfg.observers)
	c.initRenewer()
	if redisclient.IsNil(rdb) {
		c.err = ErrNilClient
	} else {
		c.node = newNode(rdb, cfg.ack, batchLanes)
		c.node.obs = c.obs
		c.nodes = []*node{c.node}
		c.markerTTL = markerTTLOf(c.nodes)
		c.subs = []*wake.Subscriber{wake.New(rdb, c.logger)}
	}
	return c
}

// Close waits for the Client's background work to finish, such as the
// release of a lock whose caller stopped waiting for it, and makes later
// calls return ErrClosed. It stops renewing locks: those obtained
// WithAutoRenew end with ErrLockLost. It does not release held locks (they
// expire) and does not close the Redis client. Close always returns nil.
func (c *Client) Close() error {
	if c.own.Close() {
		for _, s := range c.subs {
			s.Close()
		}
	}
	c.own.Wait()
	return nil
}

// usable returns the error every call returns on a Client that cannot work.
func (c *Client) usable() error {
	if c.err != nil {
		return c.err
	}
	if c.own.Closed() {
		return ErrClosed
	}
	return nil
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
	return c.acquire(ctx, lockKind, c.keys(key), ttl, nil, false, cfg)
}

// acquire obtains a hold of kind on the name keys[0], for every kind and
// every entry point: waiting as Obtain does if wait (and not a Do with
// WithoutWait),
// else in one attempt as TryObtain. limit is a semaphore's, boxed.
func (c *Client) acquire(ctx context.Context, kind *holdKind, keys []string, ttl time.Duration, limit any, wait bool, cfg obtainConfig) (*Lock, error) {
	if c.obs != nil {
		return c.observedObtain(ctx, kind, keys, ttl, limit, wait, cfg)
	}
	lock, _, err := c.acquireSeen(ctx, kind, keys, ttl, limit, wait, cfg)
	return lock, err
}

// acquireSeen is acquire without the observer, and says what the wait saw.
func (c *Client) acquireSeen(ctx context.Context, kind *holdKind, keys []string, ttl time.Duration, limit any, wait bool, cfg obtainConfig) (*Lock, waitSeen, error) {
	if !wait || cfg.noWait {
		lock, _, err := c.try(ctx, c.newAttempt(kind, keys, ttl, limit, cfg), cfg)
		return lock, waitSeen{attempts: 1}, err
	}
	w := waiter{c: c, kind: kind, limit: limit, cfg: cfg, key: keys[0], keys: keys, ttl: ttl}
	lock, err := w.obtain(ctx)
	return lock, w.seen, err
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
	return c.obtain(ctx, key, ttl, cfg)
}

// obtain is Obtain with its options read.
func (c *Client) obtain(ctx context.Context, key string, ttl time.Duration, cfg obtainConfig) (*Lock, error) {
	return c.acquire(ctx, lockKind, c.keys(key), ttl, nil, true, cfg)
}

// check validates the arguments of an obtain.
func (c *Client) check(key string, ttl time.Duration, opts []ObtainOption) (obtainConfig, error) {
	if err := c.usable(); err != nil {
		return obtainConfig{}, err
	}
	if key == "" {
		return obtainConfig{}, fmt.Errorf("%w: empty key", ErrInvalidKey)
	}
	if err := checkTTL(ttl); err != nil {
		return obtainConfig{}, err
	}
	cfg, err := newObtainConfig(opts)
	cfg.holderSuffix = c.holder
	if err == nil {
		err = c.checkGuard(key, cfg)
	}
	if err == nil && cfg.fair && c.quorum != nil {
		err = fmt.Errorf("%w: WithFair needs one Redis deployment; a Redlock quorum has no single queue", ErrInvalidOption)
	}
	return cfg, err
}

func checkTTL(ttl time.Duration) error {
	if ttl < time.Millisecond {
		return fmt.Errorf("%w: %v is under the minimum of 1ms", ErrInvalidTTL, ttl)
	}
	return nil
}

// try makes one attempt, a. When another holder has the lock,
// the error wraps ErrNotObtained, and the reply says what the holder has
// left (value, negative if unknown) and in fair mode whether the caller is
// first in the queue.
func (c *Client) try(ctx context.Context, a attempt, cfg obtainConfig) (lock *Lock, r reply, err error) {
	key := a.keys[0]
	sent := time.Now()
	o := a.op()
	a.keyArgs = a.boxedKeys(o) // for the Lock's calls, and for the take-back
	r, err = c.call(ctx, o)
	if err != nil {
		if replyLost(err) {
			// The script may have run before the reply was lost.
			c.releaseInBackground(a)
		}
		return nil, r, err
	}
	switch r.code {
	case acquired:
		lock, err = c.hold(a, r, sent, cfg)
		return lock, r, err
	case held:
		holderTTL := time.Duration(r.value) * time.Millisecond
		switch r.value {
		case freeButQueued:
			return nil, r, fmt.Errorf("%w: %s is free, but earlier waiters go first", ErrNotObtained, quoteKey(key))
		case unknownTTL:
			return nil, r, fmt.Errorf("%w: %s is held by another holder", ErrNotObtained, quoteKey(key))
		}
		return nil, r, fmt.Errorf("%w: %s is held by another holder%s", ErrNotObtained, quoteKey(key), expiresIn(holderTTL))
	case wrongType:
		return nil, r, a.kind.wrongTypeError(key)
	case guarded:
		return nil, r, &door.GuardError{Key: a.keys[len(a.keys)-1], Value: r.token}
	case limitMismatch:
		return nil, r, fmt.Errorf("%w: %s: its permits were taken with a limit of %d, not %v", ErrLimitMismatch, quoteKey(key), r.value, a.limit)
	}
	return nil, r, fmt.Errorf("dlock: acquire %s: unexpected reply code %d", quoteKey(key), r.code)
}

// hold returns the Lock that the acquire a, sent at sent, obtained with the
// reply r, renewed if cfg says so.
func (c *Client) hold(a attempt, r reply, sent time.Time, cfg obtainConfig) (*Lock, error) {
	lock := c.newLock(a, r.value, sent)
	lock.raise = r.raise
	lock.renewed, lock.record = cfg.autoRenew, cfg.record
	lock.stragglers = r.stragglers
	if c.obs != nil {
		c.observeHold(lock)
	}
	if cfg.autoRenew && !c.renewer.Add((*renewedLock)(lock)) {
		return nil, ErrClosed // closed meanwhile; the lock expires
	}
	return lock, nil
}

func expiresIn(d time.Duration) string {
	if d < 0 {
		return " with no expiry"
	}
	return " for " + d.String() + " more"
}

// replyLost reports whether err leaves unknown whether a script ran: Redis
// failed to answer (a network error, a timeout). It is false when the
// context ended first, after which call itself cleans up, and when the
// command never left the client: no connection could be had.
func replyLost(err error) bool {
	var nodeErr *NodeError
	var noAnswer *noAnswerError
	var netErr *net.OpError
	var quorumErr *QuorumError
	switch {
	case !errors.As(err, &nodeErr), errors.As(err, &noAnswer), errors.As(err, &quorumErr):
		return false // a quorum cleans up after itself
	case errors.As(err, &netErr) && netErr.Op == "dial",
		errors.Is(err, redis.ErrClosed),
		errors.Is(err, redis.ErrPoolTimeout),
		errors.Is(err, redis.ErrPoolExhausted):
		return false // never sent
	}
	return true
}

// releaseInBackground runs releaseLate in a goroutine the Client tracks.
func (c *Client) releaseInBackground(acquire attempt) {
	c.own.Go(func() { c.releaseLate(acquire) })
}

// releaseLate releases a lock whose acquire may have landed although its
// caller did not get it (the reply was lost, or the caller's context ended
// first), a lost lock that Redis may still hold, or a fair waiter's place.
// It runs in a goroutine the Client tracks. The release only deletes the
// key if it still holds token, so it never touches anyone else's lock.
// Trying for longer than the lock lives is pointless, so its ttl bounds it.
// acquire is the acquire to undo.
//
// A record's acquire (AsRecord) is not undone: its caller was told that the
// outcome is unknown (ErrOutcomeUnknown), and a record that landed is what
// it asked for (a job's done record, say): deleting it would undo finished
// work. It expires with its ttl.
func (c *Client) releaseLate(acquire attempt) {
	if acquire.record {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), acquire.ttl)
	defer cancel()
	if _, err := c.run(ctx, acquire.undo(false)); err != nil {
		c.logger.Warn("dlock: could not release a lock in the background; it expires by itself",
			"key", quoteKey(acquire.keys[0]), "ttl", acquire.ttl, "error", err)
	}
}

// newToken returns 128 random bits from crypto/rand, URL-safe base64.
func newToken() string { return newTokenWith("", "") }

// newTokenWith returns newToken followed by a and b, in one allocation.
func newTokenWith(a, b string) string {
	var random [16]byte
	_, _ = rand.Read(random[:]) // never fails: it crashes the program instead
	var encoded [randomTokenLen]byte
	base64.RawURLEncoding.Encode(encoded[:], random[:])
	var t strings.Builder
	t.Grow(randomTokenLen + len(a) + len(b))
	t.Write(encoded[:])
	t.WriteString(a)
	t.WriteString(b)
	return t.String()
}
