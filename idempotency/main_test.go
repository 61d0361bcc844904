package idempotency_test

import (
	"context"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"go.uber.org/goleak"

	"github.com/dlock-go/dlock/idempotency"
	"github.com/dlock-go/dlock/internal/testwait"
	"github.com/dlock-go/dlock/redistest"
)

// redisAddr is the address of a redis-server shared by the tests that do
// not break their server, and by the examples. Each test keeps its keys
// apart with a prefix of its own.
var redisAddr string

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(redistest.Shared(m, &redisAddr))
}

// sharedClient returns a client of the shared server, closed when the test
// ends.
func sharedClient(t testing.TB) *redis.Client {
	t.Helper()
	rdb := redis.NewClient(&redis.Options{Addr: redisAddr})
	t.Cleanup(func() { rdb.Close() })
	return rdb
}

// prefixes holds the key prefix of each test run, so that a test run again
// (go test -count) does not find the keys of its previous run.
var (
	prefixes sync.Map // testing.TB to its prefix
	testRuns atomic.Int64
)

// prefix returns a key prefix unique to the test run.
func prefix(t testing.TB) string {
	if p, ok := prefixes.Load(t); ok {
		return p.(string)
	}
	p := "idem-test:" + strings.ReplaceAll(t.Name(), "/", ":") + ":" + strconv.FormatInt(testRuns.Add(1), 10) + ":"
	p2, _ := prefixes.LoadOrStore(t, p)
	return p2.(string)
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

// mustNew returns idempotency.New's Store, closed when the test ends, and
// fails the test if New fails.
func mustNew(t testing.TB, rdb redis.UniversalClient, opts ...idempotency.Option) *idempotency.Store {
	t.Helper()
	store, err := idempotency.New(rdb, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	return store
}

// timeout returns a context that ends after d and is cancelled with the test.
func timeout(t testing.TB, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// eventually calls cond until it reports true, and fails the test if it has
// not within limit. It bounds a wait for something Redis does in its own
// time (a key expiring); it asserts no latency.
func eventually(t testing.TB, d time.Duration, what string, cond func() bool) {
	t.Helper()
	testwait.Until(t, d, what, cond)
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
