package testenv

import (
	"context"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// Addr returns the address of the redis-server that Main shares among the
// package's tests, or fails the test if Main was not given SharedServer.
func Addr(t testing.TB) string {
	t.Helper()
	if sharedAddr == "" {
		t.Fatal("testenv: no shared redis-server: TestMain does not call testenv.Main with SharedServer")
	}
	return sharedAddr
}

// Client returns a client of the shared redis-server, with opts applied to
// its options, closed when the test ends.
func Client(t testing.TB, opts ...func(*redis.Options)) *redis.Client {
	t.Helper()
	o := &redis.Options{Addr: Addr(t)}
	for _, opt := range opts {
		opt(o)
	}
	rdb := redis.NewClient(o)
	t.Cleanup(func() { rdb.Close() })
	return rdb
}

// FastFail makes a go-redis client give up quickly on a dead server: a
// short dial timeout, one dial, no retry. Pass it to Client or to
// redistest's Server.Client.
func FastFail(o *redis.Options) {
	o.DialTimeout = 200 * time.Millisecond
	o.MaxRetries = -1
	o.DialerRetries = 1
}

var (
	// runs tells apart the runs of a test in one process (go test -count),
	// and the keys of NewKey within a run.
	runs atomic.Int64
	// keys holds the key of each test that asked Key for one.
	keys sync.Map // testing.TB to string
)

// Key returns a key unique to the test and its run, the same at each call
// within the test: "test:" and the test's name, then a number that sets
// apart the runs of go test -count, which share a server.
func Key(t testing.TB) string {
	if k, ok := keys.Load(t); ok {
		return k.(string)
	}
	k, _ := keys.LoadOrStore(t, NewKey(t))
	return k.(string)
}

// NewKey returns a key of the test that no other call returns, in this
// test or any other: "test:" and the test's name, then a number.
func NewKey(t testing.TB) string {
	return "test:" + strings.ReplaceAll(t.Name(), "/", ":") + ":" + strconv.FormatInt(runs.Add(1), 10)
}

// Timeout returns a context that ends after d, and is cancelled when the
// test ends. The bound is no timing assertion: it only ends a test that
// would otherwise hang.
func Timeout(t testing.TB, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// Eventually fails the test unless cond becomes true within d, polling it
// every 5 milliseconds; what says what was awaited, for the failure. The
// bound is no timing assertion: it only ends a test that would otherwise
// hang.
func Eventually(t testing.TB, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %v", what, d)
		}
		time.Sleep(5 * time.Millisecond)
	}
}
