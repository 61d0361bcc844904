package faults

import (
	"errors"
	"fmt"
	"net"
	"sync"
	"testing"
	"time"

	toxiproxy "github.com/Shopify/toxiproxy/v2"
	"github.com/redis/go-redis/v9"
	"github.com/rs/zerolog"
)

const (
	// listenAddr is where a proxy listens: loopback only, on a free port.
	listenAddr = "127.0.0.1:0"
	// ClientTimeout is the dial, read and write timeout of the clients made
	// by [Proxy.Client]: long enough for any command on loopback, short
	// enough that a test of a blackholed node stays fast.
	ClientTimeout = 500 * time.Millisecond
)

// Proxy is a TCP proxy between clients and one upstream address that can
// break the connections through it on demand. Create one with [New] in a
// test, or [Start] in a TestMain.
//
// Every method is safe for concurrent use; changes are applied one at a
// time. A fault applies at once to the connections already open, and faults
// accumulate: two calls of [Proxy.Latency] add both delays. Removing a fault
// closes every connection through the proxy (see [Proxy.Clear]). A method
// that fails reports it with t.Errorf, and does nothing.
type Proxy struct {
	t        testing.TB // nil for a proxy from Start, whose failures panic
	addr     string
	upstream string
	proxy    *toxiproxy.Proxy
	label    string // marks the goroutines toxiproxy runs for this proxy

	mu      sync.Mutex // held while the proxy changes
	cut     bool
	stopped bool
	toxics  int             // numbers toxics, whose names must be unique
	clients []*redis.Client // closed by stop
}

// New starts a proxy on a free 127.0.0.1 port that forwards every connection
// to upstream, a "host:port" address, and registers a t.Cleanup that stops
// it. It fails the test with t.Fatalf if the proxy cannot start. The proxy
// dials upstream once per accepted connection, so upstream need not be up
// yet; while it is down, connections through the proxy are closed at once.
func New(t testing.TB, upstream string) *Proxy {
	t.Helper()
	p, err := newProxy(t, upstream)
	if err != nil {
		t.Fatalf("%v", err)
		return nil
	}
	t.Cleanup(func() {
		if err := p.stop(); err != nil {
			t.Errorf("%v", err)
		}
	})
	return p
}

// Start starts a proxy as [New] does, outside of any one test: in a
// TestMain, or in an Example. Unlike New it returns its error. The caller
// must call stop when done: it closes the clients made by [Proxy.Client],
// stops the proxy and waits until its goroutines have exited.
//
// The methods of a Proxy from Start that would fail a test panic instead,
// with the same message, and so does stop.
func Start(upstream string) (p *Proxy, stop func(), err error) {
	p, err = newProxy(nil, upstream)
	if err != nil {
		return nil, nil, err
	}
	return p, func() {
		if err := p.stop(); err != nil {
			panic(err.Error())
		}
	}, nil
}

// newProxy starts a proxy owned by t, or by nobody if t is nil.
func newProxy(t testing.TB, upstream string) (*Proxy, error) {
	if _, _, err := net.SplitHostPort(upstream); err != nil {
		return nil, fmt.Errorf("faults: upstream %q is not a host:port address: %w", upstream, err)
	}
	// The API server is never started: the proxy only needs its logger and
	// its metrics container, whose proxy metrics are off.
	server := toxiproxy.NewServer(toxiproxy.NewMetricsContainer(nil), zerolog.Nop())
	p := &Proxy{
		t:        t,
		upstream: upstream,
		proxy:    toxiproxy.NewProxy(server, "faults", listenAddr, upstream),
	}
	p.label = fmt.Sprintf("%p", p)
	var err error
	p.do(func() { err = p.proxy.Start() })
	if err != nil {
		return nil, fmt.Errorf("faults: start a proxy to %s: %w", upstream, err)
	}
	p.addr = p.proxy.Listen // the port the kernel chose
	return p, nil
}

// Addr returns the address clients connect to, "127.0.0.1:PORT". It does
// not change on Cut and Restore.
func (p *Proxy) Addr() string { return p.addr }

// Upstream returns the address the proxy forwards to.
func (p *Proxy) Upstream() string { return p.upstream }

// Client returns a new go-redis client that connects through the proxy.
// Its options are the go-redis defaults, except that Addr is the proxy's,
// the dial, read and write timeouts are [ClientTimeout], and MaxRetries is
// -1 (no retries), so that a fault shows in the first error instead of
// being retried away. Each function in opts may change them before the client is made.
// The client is closed when the proxy stops, before it stops.
func (p *Proxy) Client(opts ...func(*redis.Options)) *redis.Client {
	p.helper()
	o := &redis.Options{
		Addr:         p.addr,
		DialTimeout:  ClientTimeout,
		ReadTimeout:  ClientTimeout,
		WriteTimeout: ClientTimeout,
		MaxRetries:   -1,
	}
	for _, opt := range opts {
		opt(o)
	}
	c := redis.NewClient(o)
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.stopped {
		_ = c.Close()
		p.fail("faults: Client: proxy %s is stopped", p.addr)
		return c
	}
	p.clients = append(p.clients, c)
	return c
}

// DefaultRetries is an option of [Proxy.Client] (and of any
// redis.Options) that gives the client go-redis's default retries back
// (MaxRetries 3). go-redis then sends a command again, on another
// connection, when its reply does not come within ReadTimeout or its
// connection breaks, and every copy that reached the server runs: code
// that changes state must be tested with it too, as a client with no
// retries hides that.
func DefaultRetries(o *redis.Options) { o.MaxRetries = 0 }

// Cut closes every connection through the proxy and refuses new ones until
// [Proxy.Restore], as if the server had crashed or its host had gone off
// the network: open connections get EOF, new ones "connection refused". It
// returns when the connections are closed, so a client sees it on its next
// command; go-redis drops the closed connections from its pool and dials
// again, which is refused. The proxy's port is free while it is cut.
// Cutting a cut proxy does nothing.
func (p *Proxy) Cut() {
	p.helper()
	p.mu.Lock()
	defer p.mu.Unlock()
	p.proxy.Stop() // closes the listener, then every connection
	p.cut = true
	// Closing a connection that a goroutine is reading only marks it closed;
	// the socket is closed, and the client told, when that read returns.
	if err := p.waitGoroutines(stopTimeout); err != nil {
		p.fail("%v", err)
	}
}

// Restore accepts connections again after [Proxy.Cut], on the same address,
// with the faults that were in place. Restoring a proxy that is not cut
// does nothing. It fails the test if the port cannot be bound again.
func (p *Proxy) Restore() {
	p.helper()
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.cut || p.stopped {
		return
	}
	if err := p.listen(); err != nil {
		p.fail("faults: Restore: %v", err)
		return
	}
	p.cut = false
}

// listen makes the proxy accept connections again after it was stopped.
func (p *Proxy) listen() error {
	var err error
	p.do(func() { err = p.proxy.Start() })
	if err != nil && !errors.Is(err, toxiproxy.ErrProxyAlreadyStarted) {
		return fmt.Errorf("proxy %s: %w", p.addr, err)
	}
	return nil
}

// quiesce stops the proxy, waits until toxiproxy has no goroutine left for
// it, so no connection and no chain of toxics, runs change, and starts the
// proxy again unless it is cut. The caller holds p.mu.
//
// Removing a toxic from open connections is not safe in toxiproxy v2.12.0,
// as TestConcurrentUse showed before this was written: on a connection that
// is closing at that moment the toxic stays in the connection's chain while
// it leaves the proxy's, and a fault added later panics (index out of range
// in ToxicLink.AddToxic); removing a timeout toxic can leave the goroutine
// in front of it blocked for ever; and removing a latency can wait for ever
// on a goroutine blocked in a send, with the proxy's lock held. None of
// this can happen when there are no connections.
func (p *Proxy) quiesce(change func()) {
	p.helper()
	p.proxy.Stop()
	if err := p.waitGoroutines(stopTimeout); err != nil {
		p.fail("%v", err) // a goroutine of toxiproxy is stuck; its connection is closed
	}
	p.do(change)
	if p.cut || p.stopped {
		return
	}
	if err := p.listen(); err != nil {
		p.cut = true
		p.fail("faults: proxy %s is cut: after removing a fault: %v", p.addr, err)
	}
}

// stop closes the clients, stops the proxy and waits until toxiproxy's
// goroutines for it have exited.
func (p *Proxy) stop() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.stopped = true
	for _, c := range p.clients {
		_ = c.Close()
	}
	p.clients = nil
	p.proxy.Stop()
	return p.waitGoroutines(stopTimeout)
}

// helper marks the caller as a test helper, when there is a test.
func (p *Proxy) helper() {
	if p.t != nil {
		p.t.Helper()
	}
}

// fail reports a failed call: on the test, or with a panic outside one.
func (p *Proxy) fail(format string, args ...any) {
	if p.t == nil {
		panic(fmt.Sprintf(format, args...))
	}
	p.t.Helper()
	p.t.Errorf(format, args...)
}
