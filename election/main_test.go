package election_test

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"go.uber.org/goleak"

	"github.com/dlock-go/dlock"
	"github.com/dlock-go/dlock/internal/testwait"
	"github.com/dlock-go/dlock/redistest"
)

// redisAddr is the address of a redis-server shared by the tests that need
// no server of their own, and by the examples.
var redisAddr string

func TestMain(m *testing.M) {
	// go-redis's pool redials a dead server in a goroutine of its own, which
	// outlives tests that kill a server by up to a second.
	goleak.VerifyTestMain(redistest.Shared(m, &redisAddr),
		goleak.IgnoreAnyFunction("github.com/redis/go-redis/v9/internal/pool.(*ConnPool).tryDial"))
}

// shared returns a client of the shared server, closed when the test ends.
func shared(t testing.TB) *redis.Client {
	t.Helper()
	rdb := redis.NewClient(&redis.Options{Addr: redisAddr})
	t.Cleanup(func() { rdb.Close() })
	return rdb
}

// newLocker returns a dlock Client on rdb (the shared server's if nil),
// closed when the test ends: one per simulated process.
func newLocker(t testing.TB, rdb redis.UniversalClient) *dlock.Client {
	t.Helper()
	if rdb == nil {
		rdb = shared(t)
	}
	locker := dlock.New(rdb)
	t.Cleanup(func() { locker.Close() })
	return locker
}

// runs tells apart the runs of a test in one process (go test -count).
var runs atomic.Int64

// testName returns an election name unique to the test and its run.
func testName(t testing.TB) string {
	return fmt.Sprintf("test:%s:%d", strings.ReplaceAll(t.Name(), "/", ":"), runs.Add(1))
}

// timeout returns a context that ends after d and with the test. The limit
// is no timing assertion: it only ends a test that would otherwise hang.
func timeout(t testing.TB, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// eventually calls check until it returns true, or fails the test after
// limit (which only ends a test that would otherwise hang).
func eventually(t testing.TB, d time.Duration, what string, cond func() bool) {
	t.Helper()
	testwait.Until(t, d, what, cond)
}

// closed reports whether ch is closed (or has a value).
func closed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// newServer starts a redis-server of the test's own, for tests that stop,
// pause or restart it.
func newServer(t testing.TB) *redistest.Server {
	t.Helper()
	return redistest.NewServer(t)
}

// fastFail makes a go-redis client give up quickly on a dead server.
func fastFail(o *redis.Options) {
	o.DialTimeout = 200 * time.Millisecond
	o.MaxRetries = -1
	o.DialerRetries = 1
}

// dlockOn returns a dlock Client on srv, closed when the test ends.
func dlockOn(t testing.TB, srv *redistest.Server) *dlock.Client {
	t.Helper()
	return newLocker(t, srv.Client(fastFail))
}
