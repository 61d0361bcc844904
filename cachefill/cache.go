package cachefill

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/dlock-go/dlock"
	"github.com/dlock-go/dlock/internal/door"
	"github.com/dlock-go/dlock/internal/owner"
	"github.com/dlock-go/dlock/observe"
)

// Cache keeps entries in Redis and fills a missing one with one load
// across all the processes that share the Redis. It is safe for concurrent
// use; make one per process and share it, since loads are shared within
// a Cache too.
type Cache struct {
	rdb    redis.UniversalClient // locker's: the Cache's own scripts and reads
	locker *dlock.Client         // the caller's: the loaders' locks
	opts   options
	log    *slog.Logger
	obs    observe.PackageObserver // locker's; nil without one

	flights *group
	blocked chan struct{} // a token per Get that waits for a fill blocked on a pooled connection

	life       context.Context // ends when Close is called
	lifeEnd    context.CancelFunc
	own        *owner.Group    // every goroutine of the Cache
	mu         sync.Mutex      // guards refreshing
	refreshing map[string]bool // keys refreshed in the background now

	// falling is set from a Get's fallback on loading directly until a
	// read of Redis succeeds again: one warning per outage, not per Get.
	falling atomic.Bool

	// What Gets did, for tests.
	hits, misses, waits, loads, refreshes, fallbacks atomic.Int64
}

// New returns a Cache on the Redis deployment of locker, a Client made by
// dlock.New on a go-redis client of any kind: a *redis.Client, a Sentinel
// failover client, or a *redis.ClusterClient (an entry's keys share a
// slot). The loaders' locks are locker's: its observers
// (dlock.WithObserver) see them and its holder name (dlock.WithHolderName)
// names them; the Cache reads and stores entries through locker's go-redis
// client, and reports to locker's logger unless WithLogger says otherwise.
// It tells the observers of locker that are observe.PackageObservers what
// its fetches do: lookups (hit, stale, miss), waits for another loader,
// loads with their outcome and duration, early refreshes, fallbacks, and
// loaders that gave up (see observe.PackageCachefill). New does not talk
// to Redis.
//
// A Redlock Client (dlock.NewRedlock) is refused: the script that stores an
// entry checks the loader's lock on the server that keeps the entry, in the
// same step, which a lock on a quorum of independent servers cannot offer
// (see the package documentation). A nil locker, or one made on a nil
// go-redis client, is no panic: New returns an error wrapping ErrNilClient;
// a Redlock Client, a Client given an invalid option, or an invalid option
// of New's, an error wrapping ErrInvalidOption; and no Cache.
//
// The Client stays the caller's: Close does not close it. Close it after
// the Cache.
func New(locker *dlock.Client, opts ...Option) (*Cache, error) {
	if locker == nil {
		return nil, fmt.Errorf("%w: New with a nil dlock.Client", ErrNilClient)
	}
	d := door.DeploymentOf(locker)
	switch {
	case d.Redlock:
		return nil, fmt.Errorf("%w: New with a Redlock Client: the store of an entry checks its loader's lock on the server that keeps the entry, so the lock must be on that server; use a Client made by dlock.New", ErrInvalidOption)
	case errors.Is(d.Err, dlock.ErrNilClient):
		return nil, fmt.Errorf("%w: New with a dlock.Client made on a nil go-redis client: %w", ErrNilClient, d.Err)
	case d.Err != nil:
		return nil, fmt.Errorf("%w: New with a dlock.Client that cannot work: %w", ErrInvalidOption, d.Err)
	}
	o, err := newOptions(door.Logger(locker), opts)
	if err != nil {
		return nil, err
	}
	c := &Cache{rdb: d.Redis, locker: locker, opts: o, log: o.logger, obs: door.PackageObserver(locker), refreshing: make(map[string]bool),
		blocked: make(chan struct{}, maxBlockedWaits), own: owner.New()}
	c.life, c.lifeEnd = context.WithCancel(context.Background())
	c.flights = newGroup(c.life, c.spawn, c.fetchFor)
	return c, nil
}

// errNotNew is the error of every call of a Cache that New did not make.
var errNotNew = fmt.Errorf("%w: a Cache not made by New", ErrNilClient)

// Close ends what the Cache still does: loads, background refreshes, calls
// to Redis that did not answer in time. It cancels their contexts and
// waits for them, so a load function must return when its context ends.
// The locks of its loads are released at once, so that a Cache elsewhere
// loads instead. Gets that wait return an error, and later calls
// ErrClosed. Close closes neither the dlock Client given to New nor its
// Redis client: close the Client after the Cache.
func (c *Cache) Close() error {
	if c == nil || c.own == nil {
		return nil
	}
	c.own.Close()
	c.lifeEnd()
	c.own.Wait()
	return nil
}

// spawn runs work in a goroutine that Close waits for, unless the Cache is
// closed; it reports whether it did.
func (c *Cache) spawn(work func()) bool { return c.own.Go(work) }

// Get returns the value cached for key, or fills the cache with what load
// returns, stored for ttl (less a random jitter, see WithJitter).
//
// A hit costs one round trip to Redis and takes no lock. On a miss, one
// caller across all the processes sharing the Redis calls load (within a
// process, concurrent Gets of a key share one fetch), and the others wait
// until its value is stored, woken by the store, which hands them the
// value, or until their ctx ends. The loader's lock is renewed while load runs; if it is
// lost (its process hangs or dies), or load fails, another caller loads.
// The value Get returns is the caller's own copy.
//
// load gets a context that ends when the load timeout passes
// (WithLoadTimeout), when every Get waiting for it has given up, when the
// loader's lock is lost, or when the Cache closes. Its error reaches the
// Gets of its process and is not cached, except ErrNotFound, which is
// remembered for the not-found ttl (WithNotFoundTTL): until then Get
// returns an error wrapping ErrNotFound without calling load.
//
// An entry near its expiry, or marked by Invalidate, is loaded again in
// the background by one caller (WithEarlyRefresh), while Get keeps
// returning the entry as it is.
//
// When Redis fails, Get calls load directly and logs it (see WithLogger),
// unless WithFallback(false) makes it return the error. ttl must be at least a
// millisecond; the ttl and load of concurrent Gets of one key in a process
// are those of the first.
func (c *Cache) Get(ctx context.Context, key string, ttl time.Duration, load func(ctx context.Context) ([]byte, error)) ([]byte, error) {
	if err := c.checkGet(key, ttl, load); err != nil {
		return nil, err
	}
	// Only the first Get of a flight fetches: the others do no more than
	// join it, so that a stampede's Gets join it fast (see group.do).
	v, err := c.flights.do(ctx, key, getArgs{ttl, load})
	if err != nil {
		return nil, err
	}
	return bytes.Clone(v), nil
}

// getArgs are the arguments of a Get that a fetch needs beside the key.
type getArgs struct {
	ttl  time.Duration
	load func(ctx context.Context) ([]byte, error)
}

// fetchFor is the fetch of a flight of key, started by a Get with a.
func (c *Cache) fetchFor(ctx context.Context, key string, a getArgs) ([]byte, error) {
	return c.fetch(ctx, request{key: key, keys: keysOf(c.opts.prefix, key), ttl: a.ttl, load: a.load})
}

// checkGet returns the error of a Get with bad arguments, or on a Cache
// that cannot work.
func (c *Cache) checkGet(key string, ttl time.Duration, load func(ctx context.Context) ([]byte, error)) error {
	if err := c.check(key); err != nil {
		return err
	}
	if ttl < time.Millisecond {
		return fmt.Errorf("%w: %v for %q, want at least 1ms", ErrInvalidTTL, ttl, key)
	}
	if load == nil {
		return fmt.Errorf("%w: for %q", ErrNilLoad, key)
	}
	return nil
}

// check returns the error of a call with a bad key, or on a Cache that
// cannot work.
func (c *Cache) check(key string) error {
	if c == nil || c.own == nil {
		return errNotNew
	}
	if key == "" {
		return fmt.Errorf("%w: empty", ErrInvalidKey)
	}
	// Not under mu, which a thousand Gets of a stampede would queue on:
	// a Get that passes just as Close is called gets ErrClosed from spawn.
	if c.own.Closed() {
		return ErrClosed
	}
	return nil
}
