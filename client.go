package dlock

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
)

// Client obtains locks on one Redis deployment: a single server, a primary
// watched by Sentinel, or a Cluster. It is safe for concurrent use, and many
// goroutines should share one Client.
//
// A Client does not own the Redis client it was given: Close does not close
// it, and it must stay open as long as the Client is used.
type Client struct {
	node   *node
	logger *slog.Logger
	epoch  time.Time // monotonic origin of the validity deadlines
	err    error     // a nil client or bad option given to New; every call returns it

	mu     sync.Mutex // orders track against Close
	closed atomic.Bool
	wg     sync.WaitGroup // the goroutines of this Client
}

// New returns a Client that keeps its locks on rdb: a *redis.Client (also
// from redis.NewFailoverClient for Sentinel) or a *redis.ClusterClient.
//
// New does not talk to Redis. A nil rdb or an invalid option is not a panic:
// every call of the Client then returns the error (ErrNilClient,
// ErrInvalidOption).
func New(rdb redis.UniversalClient, opts ...Option) *Client {
	cfg := clientConfig{logger: slog.New(slog.DiscardHandler)}
	for _, opt := range opts {
		if opt == nil {
			cfg.err = fmt.Errorf("%w: nil Option", ErrInvalidOption)
			break
		}
		if opt(&cfg); cfg.err != nil {
			break
		}
	}
	c := &Client{logger: cfg.logger, epoch: time.Now(), err: cfg.err}
	if isNil(rdb) {
		c.err = ErrNilClient
	} else {
		c.node = newNode(rdb)
	}
	return c
}

// isNil reports whether rdb is nil, also as a typed nil pointer of the
// go-redis client types, which would otherwise panic on first use.
func isNil(rdb redis.UniversalClient) bool {
	switch c := rdb.(type) {
	case nil:
		return true
	case *redis.Client:
		return c == nil
	case *redis.ClusterClient:
		return c == nil
	case *redis.Ring:
		return c == nil
	}
	return false
}

// Close waits for the Client's background work to finish, such as the
// release of a lock whose caller stopped waiting for it, and makes later
// calls return ErrClosed. It does not release held locks (they expire) and
// does not close the Redis client. Close always returns nil.
func (c *Client) Close() error {
	c.mu.Lock()
	c.closed.Store(true)
	c.mu.Unlock()
	c.wg.Wait()
	return nil
}

// track registers a goroutine of the Client, unless the Client is closed.
func (c *Client) track() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed.Load() {
		return false
	}
	c.wg.Add(1)
	return true
}

// usable returns the error every call returns on a Client that cannot work.
func (c *Client) usable() error {
	if c.err != nil {
		return c.err
	}
	if c.closed.Load() {
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
	if _, err := c.check(key, ttl, opts); err != nil {
		return nil, err
	}
	lock, _, err := c.try(ctx, lockKeys(key), ttl)
	return lock, err
}

// Obtain obtains the lock named key for ttl, waiting while another holder
// has it, until ctx is done. Like sync.Mutex.Lock, but with a context.
//
// Between attempts it sleeps as the Backoff says (see WithBackoff), never
// past the moment the holder's lock expires. When ctx ends while another
// holder has the lock, the error matches both ErrNotObtained and the
// context's error (context.DeadlineExceeded or context.Canceled), so a
// caller can tell "held by someone else" from "Redis failed".
//
// Obtain waits only for the lock, not for Redis: an error from Redis (down,
// refusing, a key of another type) ends it at once.
func (c *Client) Obtain(ctx context.Context, key string, ttl time.Duration, opts ...ObtainOption) (*Lock, error) {
	cfg, err := c.check(key, ttl, opts)
	if err != nil {
		return nil, err
	}
	keys := lockKeys(key) // the same for every attempt
	var timer *time.Timer
	for attempt := 1; ; attempt++ {
		lock, holderTTL, err := c.try(ctx, keys, ttl)
		if !errors.Is(err, ErrNotObtained) {
			if attempt > 1 && ctx.Err() != nil && errors.Is(err, ctx.Err()) {
				// The context ended during an attempt; the last answer was "held".
				err = fmt.Errorf("%w: %s was held at the last attempt: %w", ErrNotObtained, quoteKey(key), err)
			}
			return lock, err
		}
		delay := max(cfg.backoff.Delay(attempt, holderTTL), 0)
		if holderTTL >= 0 {
			delay = min(delay, holderTTL)
		}
		if timer == nil {
			timer = time.NewTimer(delay)
			defer timer.Stop()
		} else {
			timer.Reset(delay)
		}
		select {
		case <-timer.C:
		case <-ctx.Done():
			return nil, fmt.Errorf("%w: %w", err, contextError(ctx))
		}
	}
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
	return newObtainConfig(opts)
}

func checkTTL(ttl time.Duration) error {
	if ttl < time.Millisecond {
		return fmt.Errorf("%w: %v is under the minimum of 1ms", ErrInvalidTTL, ttl)
	}
	return nil
}

// try makes one attempt on the lock whose keys (lockKeys) are given. When
// another holder has the lock, the error wraps ErrNotObtained and holderTTL
// is what it has left (negative if unknown).
func (c *Client) try(ctx context.Context, keys []string, ttl time.Duration) (lock *Lock, holderTTL time.Duration, err error) {
	token := newToken()
	o := op{kind: opAcquire, keys: keys, token: token, ttl: ttl}
	key := o.key()
	sent := time.Now()
	r, err := c.call(ctx, o)
	if err != nil {
		if replyLost(err) {
			// The script may have run before the reply was lost.
			c.releaseInBackground(o.keys, o.token, ttl)
		}
		return nil, -1, err
	}
	switch r.code {
	case acquired:
		return c.newLock(o, token, r.value, sent), 0, nil
	case held:
		holderTTL = time.Duration(r.value) * time.Millisecond
		return nil, holderTTL, fmt.Errorf("%w: %s is held by another holder%s", ErrNotObtained, quoteKey(key), expiresIn(holderTTL))
	case wrongType:
		return nil, -1, fmt.Errorf("%w: %s exists and is not a string, so it is no lock", ErrWrongType, quoteKey(key))
	}
	return nil, -1, fmt.Errorf("dlock: acquire %s: unexpected reply code %d", quoteKey(key), r.code)
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
	switch {
	case !errors.As(err, &nodeErr), errors.As(err, &noAnswer):
		return false
	case errors.As(err, &netErr) && netErr.Op == "dial",
		errors.Is(err, redis.ErrClosed),
		errors.Is(err, redis.ErrPoolTimeout),
		errors.Is(err, redis.ErrPoolExhausted):
		return false // never sent
	}
	return true
}

// releaseInBackground runs releaseLate in a goroutine the Client tracks.
func (c *Client) releaseInBackground(keys []string, token any, ttl time.Duration) {
	if !c.track() {
		return
	}
	go func() {
		defer c.wg.Done()
		c.releaseLate(keys, token, ttl)
	}()
}

// releaseLate releases a lock whose acquire may have landed although its
// caller did not get it: the reply was lost, or the caller's context ended
// first. It runs in a goroutine the Client tracks. The release only deletes the
// key if it still holds token, so it never touches anyone else's lock.
// Trying for longer than the lock lives is pointless, so ttl bounds it.
func (c *Client) releaseLate(keys []string, token any, ttl time.Duration) {
	ctx, cancel := context.WithTimeout(context.Background(), ttl)
	defer cancel()
	if _, err := c.node.release(ctx, keys, token); err != nil {
		c.logger.Warn("dlock: could not release a lock whose acquire reply was lost; it expires by itself",
			"key", quoteKey(keys[0]), "ttl", ttl, "error", err)
	}
}

// newToken returns 128 random bits from crypto/rand, URL-safe base64.
func newToken() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // never fails: it crashes the program instead
	return base64.RawURLEncoding.EncodeToString(b[:])
}
