package dlock_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"go.uber.org/goleak"

	"github.com/dlock-go/dlock"
	"github.com/dlock-go/dlock/internal/testwait"
	"github.com/dlock-go/dlock/redistest"
)

// redisAddr is the address of a redis-server shared by the examples.
var redisAddr string

func TestMain(m *testing.M) {
	// go-redis's pool redials a dead server in a goroutine of its own, which
	// sleeps a second between dials and only then sees that its client was
	// closed: it outlives tests that kill a server by up to that second.
	goleak.VerifyTestMain(redistest.Shared(m, &redisAddr),
		goleak.IgnoreAnyFunction("github.com/redis/go-redis/v9/internal/pool.(*ConnPool).tryDial"))
}

// env is one redis-server, a go-redis client to it, and a dlock Client on it,
// all stopped when the test ends.
type env struct {
	srv    *redistest.Server
	rdb    *redis.Client
	locker *dlock.Client
}

func setup(t testing.TB, opts ...dlock.Option) *env {
	t.Helper()
	srv := redistest.NewServer(t)
	rdb := srv.Client()
	return &env{srv: srv, rdb: rdb, locker: newLocker(t, rdb, opts...)}
}

// newLocker returns a Client on rdb that is closed when the test ends.
func newLocker(t testing.TB, rdb redis.UniversalClient, opts ...dlock.Option) *dlock.Client {
	t.Helper()
	locker := dlock.New(rdb, opts...)
	t.Cleanup(func() { locker.Close() })
	return locker
}

// testKey returns a key unique to the test.
func testKey(t testing.TB) string {
	return "test:" + strings.ReplaceAll(t.Name(), "/", ":")
}

// timeout returns a context that ends after d and is cancelled with the test.
func timeout(t testing.TB, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// mustObtain obtains key or fails the test.
func mustObtain(t testing.TB, locker *dlock.Client, key string, ttl time.Duration) *dlock.Lock {
	t.Helper()
	lock, err := locker.TryObtain(context.Background(), key, ttl)
	if err != nil {
		t.Fatalf("TryObtain(%q): %v", key, err)
	}
	return lock
}

// value returns the string at key, or "" if there is none.
func value(t testing.TB, rdb *redis.Client, key string) string {
	t.Helper()
	v, err := rdb.Get(context.Background(), key).Result()
	if errors.Is(err, redis.Nil) {
		return ""
	}
	if err != nil {
		t.Fatalf("GET %q: %v", key, err)
	}
	return v
}

// eventually fails the test unless cond becomes true within d. (The
// package's internal tests have their own wrapper, in batch_internal_test.go.)
func eventually(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	testwait.Until(t, d, what, cond)
}
