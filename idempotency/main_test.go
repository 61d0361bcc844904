package idempotency_test

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/dlock-go/dlock/idempotency"
	"github.com/dlock-go/dlock/internal/testenv"
	"github.com/dlock-go/dlock/internal/testenv/lockenv"
)

// redisAddr is the address of a redis-server shared by the tests that do
// not break their server, and by the examples. Each test keeps its keys
// apart with a prefix of its own.
var redisAddr string

func TestMain(m *testing.M) {
	testenv.Main(m, testenv.SharedServer(&redisAddr))
}

// prefix returns a key prefix unique to the test run.
func prefix(t testing.TB) string {
	return testenv.Key(t) + ":"
}

// receive returns the next value from ch, and fails the test if none comes
// within ten seconds: no test waits without a bound.
func receive[T any](t testing.TB, ch <-chan T) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(10 * time.Second):
		t.Fatal("nothing happened within 10s")
	}
	var zero T
	return zero
}

// newStore returns a Store on rdb with the test's prefix, closed when the
// test ends (before rdb is: cleanups run last-in first-out).
func newStore(t testing.TB, rdb redis.UniversalClient, opts ...idempotency.Option) *idempotency.Store {
	t.Helper()
	opts = append([]idempotency.Option{idempotency.WithPrefix(prefix(t))}, opts...)
	return mustNew(t, rdb, opts...)
}

// mustNew returns idempotency.New's Store on a dlock Client of its own on
// rdb (one per simulated process), both closed when the test ends, the
// Store first, and fails the test if New fails.
func mustNew(t testing.TB, rdb redis.UniversalClient, opts ...idempotency.Option) *idempotency.Store {
	t.Helper()
	store, err := idempotency.New(lockenv.Locker(t, rdb), opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	return store
}

// keysOf returns the Redis keys of the test's Store whose names match
// pattern after the prefix, such as "*:lock".
func keysOf(t testing.TB, rdb redis.UniversalClient, pattern string) []string {
	t.Helper()
	keys, err := rdb.Keys(context.Background(), prefix(t)+pattern).Result()
	if err != nil {
		t.Fatal(err)
	}
	return keys
}
