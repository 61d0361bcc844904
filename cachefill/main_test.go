package cachefill_test

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"go.uber.org/goleak"

	"github.com/dlock-go/dlock/cachefill"
	"github.com/dlock-go/dlock/internal/testwait"
	"github.com/dlock-go/dlock/redistest"
)

// redisAddr is the address of a redis-server shared by the tests that need
// no server of their own, and by the examples.
var redisAddr string

func TestMain(m *testing.M) {
	// go-redis's pool redials a dead server in a goroutine of its own, which
	// sleeps a second between dials and only then sees that its client was
	// closed: it outlives tests that kill a server by up to that second.
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

// newCache returns a Cache on rdb, closed when the test ends.
func newCache(t testing.TB, rdb redis.UniversalClient, opts ...cachefill.Option) *cachefill.Cache {
	t.Helper()
	c := cachefill.New(rdb, opts...)
	t.Cleanup(func() { c.Close() })
	return c
}

// testKey returns a key of the test, new at each call, so that a run of
// the tests does not find the entries of another (go test -count).
func testKey(t testing.TB) string {
	return fmt.Sprintf("test:%s:%08x", strings.ReplaceAll(t.Name(), "/", ":"), rand.Uint32())
}

// timeout returns a context that ends after d and is cancelled with the test.
func timeout(t testing.TB, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// eventually fails the test unless cond becomes true within d.
func eventually(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	testwait.Until(t, d, what, cond)
}

// source is a stand-in for a database: a value per key, and a count of the
// loads that read it.
type source struct {
	mu    sync.Mutex
	value string
	loads atomic.Int64
}

// load is a load function that returns the source's value.
func (s *source) load(context.Context) ([]byte, error) {
	s.loads.Add(1)
	s.mu.Lock()
	defer s.mu.Unlock()
	return []byte(s.value), nil
}

// gate is a load function that blocks until it is opened, counting the
// calls that entered it.
type gate struct {
	open    chan struct{}
	entered atomic.Int64
	value   []byte
	err     error
}

func newGate(value string, err error) *gate {
	return &gate{open: make(chan struct{}), value: []byte(value), err: err}
}

// load waits for the gate to open, or for ctx to end.
func (g *gate) load(ctx context.Context) ([]byte, error) {
	g.entered.Add(1)
	select {
	case <-g.open:
		return g.value, g.err
	case <-ctx.Done():
		return nil, context.Cause(ctx)
	}
}

// stubborn waits for the gate to open, whatever its context says.
func (g *gate) stubborn(context.Context) ([]byte, error) {
	g.entered.Add(1)
	<-g.open
	return g.value, g.err
}

// roundTrips counts the requests a client sends: each command, or each
// pipeline, is one write on its connection. The handshake of a new
// connection (HELLO, then CLIENT commands, which cachefill never sends) is
// not counted: go-redis may dial a connection beside an idle one that it
// has not taken back into its pool yet.
type roundTrips struct{ n atomic.Int64 }

func (r *roundTrips) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	var d net.Dialer
	c, err := d.DialContext(ctx, network, addr)
	if err != nil {
		return nil, err
	}
	return &countingConn{TCPConn: c.(*net.TCPConn), writes: &r.n}, nil
}

// countingConn embeds *net.TCPConn, so that go-redis still finds its
// SyscallConn for the health check of pooled connections.
type countingConn struct {
	*net.TCPConn
	writes *atomic.Int64
}

func (c *countingConn) Write(b []byte) (int, error) {
	if !handshake(b) {
		c.writes.Add(1)
	}
	return c.TCPConn.Write(b)
}

// handshake reports whether the request b starts with a command of a new
// connection's handshake: HELLO or CLIENT.
func handshake(b []byte) bool {
	// A RESP array of bulk strings: *<n>\r\n$<len>\r\n<name>\r\n...
	parts := bytes.SplitN(b, []byte("\r\n"), 4)
	if len(parts) < 3 {
		return false
	}
	name := strings.ToLower(string(parts[2]))
	return name == "hello" || name == "client"
}

// logBuffer is a slog handler's output, safe for concurrent use.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

func (l *logBuffer) logger() *slog.Logger {
	return slog.New(slog.NewTextHandler(l, nil))
}
