package cachefill_test

import (
	"bytes"
	"context"
	"log/slog"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/dlock-go/dlock/cachefill"
	"github.com/dlock-go/dlock/internal/testenv"
	"github.com/dlock-go/dlock/internal/testenv/lockenv"
)

// redisAddr is the address of a redis-server shared by the tests that need
// no server of their own, and by the examples.
var redisAddr string

func TestMain(m *testing.M) {
	testenv.Main(m, testenv.SharedServer(&redisAddr), testenv.IgnoreRedial())
}

// newCache returns a Cache on a dlock Client of its own on rdb (one per
// simulated process), both closed when the test ends, the Cache first.
func newCache(t testing.TB, rdb redis.UniversalClient, opts ...cachefill.Option) *cachefill.Cache {
	t.Helper()
	c, err := cachefill.New(lockenv.Locker(t, rdb), opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
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
