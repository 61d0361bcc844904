package dlock_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/dlock-go/dlock"
	"github.com/dlock-go/dlock/cachefill"
	"github.com/dlock-go/dlock/election"
	"github.com/dlock-go/dlock/idempotency"
	"github.com/dlock-go/dlock/internal/testenv"
	"github.com/dlock-go/dlock/jobs"
	"github.com/dlock-go/dlock/redistest"
	"github.com/dlock-go/dlock/stock"
)

// TestAppKeysOnlyGetsTheMissingRule: a user allowed the application's keys
// alone (~app:*, no channel) gets from every call, at once, Redis's NOPERM
// and the rule it lacks (~dlock:*), and nothing is left behind in Redis.
func TestAppKeysOnlyGetsTheMissingRule(t *testing.T) {
	srv := redistest.NewServer(t)
	admin := srv.Client()
	ctx := testenv.Timeout(t, 30*time.Second)
	if err := admin.Do(ctx, "ACL", "SETUSER", "app", "reset", "on", ">pw", "~app:*", "+@all").Err(); err != nil {
		t.Fatal(err)
	}
	rdb := srv.Client(func(o *redis.Options) { o.Username, o.Password = "app", "pw" })
	locker := dlock.New(rdb)
	t.Cleanup(func() { locker.Close() })
	runner, err := jobs.New(locker)
	check(t, "jobs.New", err)
	leader, err := election.New(locker, appElect)
	check(t, "election.New", err)
	store, err := idempotency.New(locker, idempotency.WithPrefix("app:idem:"))
	check(t, "idempotency.New", err)
	cache, err := cachefill.New(locker, cachefill.WithPrefix("app:cache"), cachefill.WithFallback(false))
	check(t, "cachefill.New", err)
	noop := func(context.Context) error { return nil }
	calls := []struct {
		name string
		call func(ctx context.Context) error
	}{
		{"TryObtain", func(ctx context.Context) error { _, err := locker.TryObtain(ctx, appLock, time.Minute); return err }},
		{"Obtain", func(ctx context.Context) error { _, err := locker.Obtain(ctx, appLock, time.Minute); return err }},
		{"Obtain WithFair", func(ctx context.Context) error {
			_, err := locker.Obtain(ctx, appFair, time.Minute, dlock.WithFair())
			return err
		}},
		{"TryObtainMulti", func(ctx context.Context) error {
			_, err := locker.TryObtainMulti(ctx, []string{appLock, appFair}, time.Minute)
			return err
		}},
		{"Do", func(ctx context.Context) error { return locker.Do(ctx, appLock, time.Minute, noop) }},
		{"Semaphore.Acquire", func(ctx context.Context) error {
			_, err := locker.Semaphore(appSem, 2).Acquire(ctx, time.Minute)
			return err
		}},
		{"RWMutex.RLock", func(ctx context.Context) error { _, err := locker.RWMutex(appRW).RLock(ctx, time.Minute); return err }},
		{"RWMutex.Lock", func(ctx context.Context) error { _, err := locker.RWMutex(appRW).Lock(ctx, time.Minute); return err }},
		{"Inspect", func(ctx context.Context) error { _, err := locker.Inspect(ctx, appLock); return err }},
		{"ForceRelease", func(ctx context.Context) error { _, err := locker.ForceRelease(ctx, appLock); return err }},
		{"WaitRelease", func(ctx context.Context) error { return locker.WaitRelease(ctx, appLock) }},
		{"jobs.Run", func(ctx context.Context) error { _, err := runner.Run(ctx, "app-job", time.Now(), noop); return err }},
		{"election.Campaign", func(ctx context.Context) error { _, err := leader.Campaign(ctx, "me"); return err }},
		{"election.Leader", func(ctx context.Context) error { _, err := leader.Leader(ctx); return err }},
		{"idempotency.Do", func(ctx context.Context) error {
			_, _, err := store.Do(ctx, "request", []byte("body"), func(context.Context) ([]byte, error) { return nil, nil })
			return err
		}},
		{"cachefill.Get", func(ctx context.Context) error {
			_, err := cache.Get(ctx, "app:cached", time.Minute, func(context.Context) ([]byte, error) { return []byte("v"), nil })
			return err
		}},
	}
	for _, c := range calls {
		t.Run(c.name, func(t *testing.T) {
			// A call that waited for the deadline would end with the
			// context's error, not Redis's refusal: the refusal is at once.
			err := c.call(testenv.Timeout(t, 20*time.Second))
			if err == nil {
				t.Fatal("no error")
			}
			msg := err.Error()
			if !strings.Contains(msg, "NOPERM") || !strings.Contains(msg, "the Redis user's ACL lacks ~dlock:* for the ") {
				t.Errorf("error %q does not name the missing rule", msg)
			}
		})
	}
	// nothing holds a lock: the refused acquires took none
	for _, key := range []string{appLock, appFair, appSem, appRW, appElect} {
		if admin.Exists(ctx, key).Val() != 0 {
			t.Errorf("%s is left in Redis", key)
		}
	}
}

// TestReleaseWithoutChannelRights: a user allowed the keys but no channel
// (no &dlock:*) still takes and releases locks, and a release says so: the
// release messages it may not publish are not part of its effect. Its
// waiters, which may not subscribe, find the lock free at a later try.
func TestReleaseWithoutChannelRights(t *testing.T) {
	srv := redistest.NewServer(t)
	ctx := testenv.Timeout(t, 30*time.Second)
	if err := srv.Client().Do(ctx, "ACL", "SETUSER", "app", "reset", "on", ">pw", "~app:*", "~dlock:*", "+@all").Err(); err != nil {
		t.Fatal(err)
	}
	rdb := srv.Client(func(o *redis.Options) { o.Username, o.Password = "app", "pw" })
	locker := dlock.New(rdb)
	t.Cleanup(func() { locker.Close() })
	for _, fair := range []bool{false, true} {
		tried := &signalledBackoff{tried: make(chan struct{})}
		opts := []dlock.ObtainOption{dlock.WithBackoff(tried)}
		if fair {
			opts = append(opts, dlock.WithFair())
		}
		l, err := locker.TryObtain(ctx, appLock, time.Minute, opts...)
		check(t, "TryObtain", err)
		waited := make(chan error, 1)
		go func() {
			w, err := locker.Obtain(ctx, appLock, time.Minute, opts...)
			if err == nil {
				err = w.Release(ctx)
			}
			waited <- err
		}()
		<-tried.tried // the waiter found the lock held
		check(t, "Release", l.Release(ctx))
		check(t, "the waiter", <-waited)
	}
	sem, err := locker.Semaphore(appSem, 1).TryAcquire(ctx, time.Minute)
	check(t, "TryAcquire", err)
	check(t, "Release", sem.Release(ctx))
	if _, err := locker.TryObtain(ctx, appForce, time.Minute); err != nil {
		t.Fatal(err)
	}
	if released, err := locker.ForceRelease(ctx, appForce); err != nil || !released {
		t.Fatalf("ForceRelease = %v, %v; want true", released, err)
	}
}

// signalledBackoff waits delay (20ms if zero) between tries, and closes
// tried at the first failed one.
type signalledBackoff struct {
	once  sync.Once
	tried chan struct{}
	delay time.Duration
}

func (b *signalledBackoff) Delay(int, time.Duration) time.Duration {
	b.once.Do(func() { close(b.tried) })
	if b.delay == 0 {
		return 20 * time.Millisecond
	}
	return b.delay
}

// TestPackageKeysGetTheMissingRule: a user allowed dlock's keys and
// channels but not a package's own prefix gets, from the package's own
// scripts, the key rule that is missing: the package's prefix.
func TestPackageKeysGetTheMissingRule(t *testing.T) {
	srv := redistest.NewServer(t)
	ctx := testenv.Timeout(t, 30*time.Second)
	if err := srv.Client().Do(ctx, "ACL", "SETUSER", "app", "reset", "on", ">pw", "~app:*", "~dlock:*", "&dlock:*", "+@all").Err(); err != nil {
		t.Fatal(err)
	}
	rdb := srv.Client(func(o *redis.Options) { o.Username, o.Password = "app", "pw" })
	locker := dlock.New(rdb)
	t.Cleanup(func() { locker.Close() })
	cache, err := cachefill.New(locker, cachefill.WithFallback(false)) // keys under "cachefill"
	check(t, "cachefill.New", err)
	inv, err := stock.New(rdb) // keys under "stock"
	check(t, "stock.New", err)
	t.Cleanup(func() { inv.Close() })
	for _, c := range []struct {
		name, rule string
		call       func() error
	}{
		{"cachefill.Get", "~cachefill*", func() error {
			_, err := cache.Get(ctx, "app:cached", time.Minute, func(context.Context) ([]byte, error) { return []byte("v"), nil })
			return err
		}},
		{"stock.Set", "~stock*", func() error { return inv.Set(ctx, "shirt", 1) }},
		{"stock.Reserve", "~stock*", func() error { return inv.Reserve(ctx, "shirt", "o1", 1, time.Minute) }},
	} {
		err := c.call()
		if err == nil || !strings.Contains(err.Error(), "the Redis user's ACL lacks "+c.rule) {
			t.Errorf("%s: %v, want an error naming %s", c.name, err, c.rule)
		}
		if errors.Is(err, stock.ErrOutcomeUnknown) {
			t.Errorf("%s: %v: a refused call is no unknown outcome", c.name, err)
		}
	}
}
