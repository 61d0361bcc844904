package faults_test

import (
	"errors"
	"io"
	"net"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"go.uber.org/goleak"

	"github.com/dlock-go/dlock/faults"
	"github.com/dlock-go/dlock/internal/testenv"
	"github.com/dlock-go/dlock/redistest"
)

func TestMain(m *testing.M) {
	// No goroutine is ignored: a proxy's cleanup waits until toxiproxy's
	// goroutines for it have exited, and toxiproxy starts none of its own.
	goleak.VerifyTestMain(m)
}

const (
	// readTimeout is the read timeout of clients that meet a blackhole.
	readTimeout = 200 * time.Millisecond
	// hangLimit only tells a command that fails from one that hangs: it is
	// far above any time these commands should take.
	hangLimit = 5 * time.Second
)

// setup starts a server and a proxy in front of it.
func setup(t *testing.T) (*redistest.Server, *faults.Proxy) {
	t.Helper()
	srv := redistest.NewServer(t)
	return srv, faults.New(t, srv.Addr())
}

// withReadTimeout sets a client's read timeout to readTimeout.
func withReadTimeout(o *redis.Options) { o.ReadTimeout = readTimeout }

// mustPing fails the test if PING through rdb fails.
func mustPing(t *testing.T, rdb *redis.Client, when string) {
	t.Helper()
	if err := rdb.Ping(t.Context()).Err(); err != nil {
		t.Fatalf("PING %s: %v", when, err)
	}
}

// onOpenConnection runs f, which sends one command with rdb, and fails the
// test if rdb dialed a new connection for it: the fault under test must act
// on the connection that was already in the pool.
func onOpenConnection(t *testing.T, rdb *redis.Client, f func()) {
	t.Helper()
	misses := rdb.PoolStats().Misses
	f()
	if rdb.PoolStats().Misses != misses {
		t.Errorf("the command dialed a new connection, want it sent on the open one")
	}
}

// timed runs f and returns its error and how long it took.
func timed(f func() error) (time.Duration, error) {
	start := time.Now()
	err := f()
	return time.Since(start), err
}

// isConnError reports whether err is what a client gets from a closed or
// refused connection.
func isConnError(err error) bool {
	var opErr *net.OpError
	return errors.As(err, &opErr) || errors.Is(err, io.EOF) ||
		errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.ECONNRESET)
}

// isTimeout reports whether err is a network timeout.
func isTimeout(err error) bool {
	var netErr net.Error
	return errors.As(err, &netErr) && netErr.Timeout()
}

func TestPing(t *testing.T) {
	t.Parallel()
	srv, p := setup(t)
	if host, _, err := net.SplitHostPort(p.Addr()); err != nil || host != "127.0.0.1" {
		t.Errorf("Addr() = %q, want a 127.0.0.1 address", p.Addr())
	}
	if p.Upstream() != srv.Addr() {
		t.Errorf("Upstream() = %q, want %q", p.Upstream(), srv.Addr())
	}
	rdb := p.Client()
	mustPing(t, rdb, "through the proxy")
	if err := rdb.Set(t.Context(), "k", "v", 0).Err(); err != nil {
		t.Fatalf("SET through the proxy: %v", err)
	}
	if got := srv.Client().Get(t.Context(), "k").Val(); got != "v" {
		t.Errorf("the server holds %q, want the value set through the proxy", got)
	}
}

func TestCutRestore(t *testing.T) {
	t.Parallel()
	_, p := setup(t)
	// Timeouts far above hangLimit: a cut must fail a command at once, not
	// by a timeout.
	rdb := p.Client(func(o *redis.Options) {
		o.DialTimeout = 2 * hangLimit
		o.ReadTimeout = 2 * hangLimit
	})
	mustPing(t, rdb, "before Cut") // leaves a connection in the pool
	open, err := net.Dial("tcp", p.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer open.Close()

	p.Cut()
	if _, err := open.Read(make([]byte, 1)); !errors.Is(err, io.EOF) {
		t.Errorf("read on a connection open before Cut = %v, want EOF", err)
	}
	// go-redis finds its connection closed, and dials again.
	took, err := timed(func() error { return rdb.Ping(t.Context()).Err() })
	if !errors.Is(err, syscall.ECONNREFUSED) {
		t.Errorf("PING after Cut = %v, want connection refused", err)
	}
	if took > hangLimit {
		t.Errorf("PING after Cut took %v, want it to fail at once", took)
	}
	if conn, err := net.Dial("tcp", p.Addr()); !errors.Is(err, syscall.ECONNREFUSED) {
		if conn != nil {
			conn.Close()
		}
		t.Errorf("dial after Cut = %v, want connection refused", err)
	}
	p.Cut() // does nothing

	p.Restore()
	mustPing(t, rdb, "after Restore")
	p.Restore() // does nothing
	mustPing(t, rdb, "after a second Restore")
}

func TestLatency(t *testing.T) {
	t.Parallel()
	_, p := setup(t)
	rdb := p.Client()

	// Lower bounds only: a loaded machine may add any amount of time.
	const d = 50 * time.Millisecond
	for _, jitter := range []time.Duration{0, d / 2} {
		mustPing(t, rdb, "before Latency") // the connection is open before the fault
		remove := p.Latency(d, jitter)
		var err error
		var took time.Duration
		onOpenConnection(t, rdb, func() {
			took, err = timed(func() error { return rdb.Ping(t.Context()).Err() })
		})
		if err != nil {
			t.Fatalf("PING with Latency(%v, %v): %v", d, jitter, err)
		}
		if least := 2 * (d - jitter); took < least {
			t.Errorf("PING with Latency(%v, %v) took %v, want at least %v", d, jitter, took, least)
		}
		remove()
		remove() // does nothing
	}
	mustPing(t, rdb, "after the latency is removed")
}

func TestLatencyInvalid(t *testing.T) {
	t.Parallel()
	srv := redistest.NewServer(t)
	// Outside a test, a proxy's failures panic, which this test can see.
	p, stop, err := faults.Start(srv.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	for _, tc := range []struct{ d, jitter time.Duration }{
		{-time.Millisecond, 0},
		{time.Millisecond, -time.Millisecond},
		{time.Millisecond, 2 * time.Millisecond},
	} {
		func() {
			defer func() {
				if msg, _ := recover().(string); !strings.Contains(msg, "want 0 <= jitter <= d") {
					t.Errorf("Latency(%v, %v) panicked with %q, want a message about its arguments", tc.d, tc.jitter, msg)
				}
			}()
			p.Latency(tc.d, tc.jitter)
		}()
	}
}

func TestBlackhole(t *testing.T) {
	t.Parallel()
	_, p := setup(t)
	rdb := p.Client(withReadTimeout)
	mustPing(t, rdb, "before Blackhole") // the connection is open before the fault

	p.Blackhole()
	var err error
	var took time.Duration
	onOpenConnection(t, rdb, func() {
		took, err = timed(func() error { return rdb.Ping(t.Context()).Err() })
	})
	if !isTimeout(err) {
		t.Errorf("PING on an open connection into a blackhole = %v, want a timeout", err)
	}
	if took < readTimeout || took > hangLimit {
		t.Errorf("PING into a blackhole took %v, want the read timeout, %v", took, readTimeout)
	}
	if err := p.Client(withReadTimeout).Ping(t.Context()).Err(); !isTimeout(err) {
		t.Errorf("PING on a new connection into a blackhole = %v, want a timeout", err)
	}

	p.Clear()
	mustPing(t, rdb, "after Clear")
}

func TestBlackholeReplies(t *testing.T) {
	t.Parallel()
	srv, p := setup(t)
	rdb := p.Client(withReadTimeout)
	mustPing(t, rdb, "before BlackholeReplies")

	remove := p.BlackholeReplies()
	onOpenConnection(t, rdb, func() {
		if err := rdb.Set(t.Context(), "k", "v", 0).Err(); !isTimeout(err) {
			t.Errorf("SET with the replies blackholed = %v, want a timeout", err)
		}
	})
	if got := srv.Client().Get(t.Context(), "k").Val(); got != "v" {
		t.Errorf("the server holds %q, want the SET to have run", got)
	}
	remove()
	mustPing(t, rdb, "after the blackhole is removed")
}

func TestResetPeer(t *testing.T) {
	t.Parallel()
	srv, p := setup(t)
	rdb := p.Client()
	mustPing(t, rdb, "before ResetPeer") // the connection is open before the fault

	remove := p.ResetPeer()
	onOpenConnection(t, rdb, func() {
		if err := rdb.Set(t.Context(), "k", "old", 0).Err(); !errors.Is(err, io.EOF) {
			t.Errorf("SET on an open connection = %v, want EOF", err)
		}
	})
	if err := p.Client().Set(t.Context(), "k", "new", 0).Err(); !isConnError(err) {
		t.Errorf("SET on a new connection = %v, want a connection error", err)
	}
	// go-redis reports EOF for a new connection too; a plain one shows the
	// reset.
	conn, err := net.Dial("tcp", p.Addr())
	if err != nil {
		t.Fatalf("dial with ResetPeer: %v", err)
	}
	defer conn.Close()
	if _, err := conn.Write([]byte("PING\r\n")); err != nil {
		t.Fatalf("write with ResetPeer: %v", err)
	}
	if _, err := conn.Read(make([]byte, 64)); !errors.Is(err, syscall.ECONNRESET) {
		t.Errorf("read on a new connection = %v, want connection reset", err)
	}
	if n := srv.Client().Exists(t.Context(), "k").Val(); n != 0 {
		t.Errorf("a SET reached the server through a reset connection")
	}

	remove()
	mustPing(t, rdb, "after the reset is removed")
}

func TestClearLeavesCut(t *testing.T) {
	t.Parallel()
	_, p := setup(t)
	rdb := p.Client()
	p.Cut()
	p.Latency(time.Millisecond, 0)
	p.Clear()
	if err := rdb.Ping(t.Context()).Err(); !isConnError(err) {
		t.Errorf("PING after Cut and Clear = %v, want a connection error", err)
	}
	p.Restore()
	mustPing(t, rdb, "after Restore")
}

func TestFaultsSurviveCut(t *testing.T) {
	t.Parallel()
	_, p := setup(t)
	rdb := p.Client(withReadTimeout)
	p.Blackhole()
	p.Cut()
	p.Restore()
	if err := rdb.Ping(t.Context()).Err(); !isTimeout(err) {
		t.Errorf("PING into a blackhole after Cut and Restore = %v, want a timeout", err)
	}
}

func TestNodes(t *testing.T) {
	t.Parallel()
	nodes := faults.Nodes(t, 3)
	nodes[1].Proxy.Cut()
	for i, node := range nodes {
		if node.Proxy.Upstream() != node.Server.Addr() {
			t.Errorf("node %d: the proxy forwards to %s, want its server %s", i, node.Proxy.Upstream(), node.Server.Addr())
		}
		err := node.Proxy.Client().Ping(t.Context()).Err()
		if i == 1 && !isConnError(err) {
			t.Errorf("PING the cut node = %v, want a connection error", err)
		}
		if i != 1 && err != nil {
			t.Errorf("PING node %d: %v", i, err)
		}
	}
}

// Faults are added and removed while commands run on open connections and
// connections close: toxiproxy alone panics or leaks goroutines here (see
// Proxy.Clear). Errors of the commands are expected; a panic, a race or a
// goroutine left behind fails the test. Not parallel: it keeps the CPU busy,
// which would slow down the tests that measure timeouts.
func TestConcurrentUse(t *testing.T) {
	_, p := setup(t)
	rdb := p.Client(func(o *redis.Options) {
		o.PoolSize = 4
		o.ReadTimeout = 20 * time.Millisecond // connections close all the time
	})
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
					_ = rdb.Ping(t.Context()).Err()
					time.Sleep(time.Millisecond) // a refused dial returns at once
				}
			}
		})
	}
	for range 20 {
		removeLatency := p.Latency(time.Millisecond, 0)
		removeBlackhole := p.Blackhole()
		time.Sleep(2 * time.Millisecond)
		removeBlackhole()
		removeLatency()
		p.ResetPeer()
		p.BlackholeReplies()
		time.Sleep(2 * time.Millisecond)
		p.Cut()
		p.Restore()
		p.Clear()
	}
	close(stop)
	wg.Wait()
	// After as many refused dials as its pool has connections, go-redis
	// answers with the last dial error until a dial of its own, once a
	// second, gets through: wait for that, then PING.
	testenv.Eventually(t, 5*time.Second, "a PING through after the faults", func() bool {
		return rdb.Ping(t.Context()).Err() == nil
	})
	mustPing(t, rdb, "after the faults")
}

func TestStartBadUpstream(t *testing.T) {
	t.Parallel()
	if _, _, err := faults.Start("no port"); err == nil {
		t.Error("Start with an upstream that is not host:port succeeded")
	}
}

// A proxy's cleanup returns only when toxiproxy's goroutines for it have
// exited. Not parallel: no other proxy may run while the stacks are read.
func TestNoGoroutinesAfterCleanup(t *testing.T) {
	// The server outlives the subtest, so that the proxy's cleanup is the
	// last thing the subtest does before the stacks are read.
	srv := redistest.NewServer(t)
	t.Run("proxy", func(t *testing.T) {
		p := faults.New(t, srv.Addr())
		rdb := p.Client(withReadTimeout)
		mustPing(t, rdb, "through the proxy")
		p.Latency(time.Millisecond, 0)
		mustPing(t, rdb, "with latency")
		p.Blackhole()
		_ = rdb.Ping(t.Context()) // times out, with a connection open
		p.ResetPeer()
		p.Cut()
		p.Restore()
		_ = p.Client().Ping(t.Context()) // left in the blackhole
	})
	buf := make([]byte, 1<<20)
	stacks := string(buf[:runtime.Stack(buf, true)])
	if strings.Contains(stacks, "github.com/Shopify/toxiproxy") {
		t.Errorf("toxiproxy's goroutines still run after the proxy's cleanup:\n%s", stacks)
	}
}

// Client's defaults can be changed, and the ones not changed stay.
func TestClientOptions(t *testing.T) {
	t.Parallel()
	_, p := setup(t)
	rdb := p.Client(func(o *redis.Options) { o.DB = 1 })
	if got := rdb.Options(); got.Addr != p.Addr() || got.DB != 1 || got.MaxRetries > 0 ||
		got.ReadTimeout != faults.ClientTimeout {
		t.Errorf("client options: Addr %s, DB %d, MaxRetries %d, ReadTimeout %v", got.Addr, got.DB, got.MaxRetries, got.ReadTimeout)
	}
	mustPing(t, rdb, "on database 1")
}
