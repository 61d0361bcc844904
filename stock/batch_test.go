package stock_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/dlock-go/dlock/redistest"
	"github.com/dlock-go/dlock/stock"
)

// lanes is a go-redis hook that holds up the Inventory's lanes: while
// armed, a script sent alone waits until release, then fails without
// reaching Redis, so that the calls after it queue. It also records the
// orders of every pipeline of scripts, in the order sent.
type lanes struct {
	armed   atomic.Bool
	arrived chan struct{}
	release chan struct{}
	before  func() // if set, runs before each pipeline of scripts goes out

	mu        sync.Mutex
	pipelines [][]string
}

var errLaneHeld = errors.New("test: lane held")

func newLanes() *lanes {
	return &lanes{arrived: make(chan struct{}, 100), release: make(chan struct{})}
}

func (l *lanes) DialHook(next redis.DialHook) redis.DialHook { return next }

func (l *lanes) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if !l.armed.Load() || !isScript(cmd) {
			return next(ctx, cmd)
		}
		l.arrived <- struct{}{}
		<-l.release
		cmd.SetErr(errLaneHeld)
		return errLaneHeld
	}
}

func (l *lanes) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		var orders []string
		for _, cmd := range cmds {
			if isScript(cmd) {
				orders = append(orders, fmt.Sprint(cmd.Args()[7])) // after the 3 KEYS and the retention
			}
		}
		if len(orders) > 0 {
			l.mu.Lock()
			l.pipelines = append(l.pipelines, orders)
			l.mu.Unlock()
			if l.before != nil {
				l.before()
			}
		}
		return next(ctx, cmds)
	}
}

func (l *lanes) sent() [][]string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.pipelines)
}

func isScript(cmd redis.Cmder) bool {
	return cmd.Name() == "evalsha" || cmd.Name() == "eval"
}

// hold takes every lane of inv with a Reserve of sku that l holds up, and
// returns a function that lets them go (they fail) and waits for them.
func (l *lanes) hold(t *testing.T, inv *stock.Inventory, sku string) (letGo func()) {
	t.Helper()
	l.armed.Store(true)
	var wg sync.WaitGroup
	for i := range stock.BatchLanes {
		wg.Go(func() {
			err := inv.Reserve(context.Background(), sku, fmt.Sprint("lane-", i), 1, time.Minute)
			if !errors.Is(err, errLaneHeld) {
				t.Errorf("the Reserve holding lane %d = %v, want it held up", i, err)
			}
		})
	}
	for range stock.BatchLanes {
		<-l.arrived
	}
	l.armed.Store(false) // what comes next is sent, or queued
	return func() {
		close(l.release)
		wg.Wait()
	}
}

// queue starts call in a goroutine and waits until it is queued behind the
// held lanes, the n-th; it returns its error.
func queue(t *testing.T, inv *stock.Inventory, n int, call func() error) <-chan error {
	t.Helper()
	errc := make(chan error, 1)
	go func() { errc <- call() }()
	eventually(t, 10*time.Second, fmt.Sprintf("call %d queued", n), func() bool { return stock.QueuedCalls(inv) == n })
	return errc
}

// Calls that queue while the lanes are busy go out as one pipeline, in the
// order they came: the first takes the last three units, the second finds
// none.
func TestBatchKeepsOrder(t *testing.T) {
	t.Parallel()
	rdb := shared(t)
	l := newLanes()
	rdb.AddHook(l)
	inv := newInventory(t, rdb)
	ctx := context.Background()
	sku := testSKU(t, "shirt")
	mustSet(t, inv, sku, 3)
	if err := inv.Reserve(ctx, sku, "earlier", 1, time.Minute); err != nil {
		t.Fatal(err)
	}

	letGo := l.hold(t, inv, sku)
	big := queue(t, inv, 1, func() error { return inv.Reserve(ctx, sku, "big", 2, time.Minute) })
	small := queue(t, inv, 2, func() error { return inv.Reserve(ctx, sku, "small", 1, time.Minute) })
	cancel := queue(t, inv, 3, func() error { return inv.Cancel(ctx, sku, "earlier") })
	letGo()

	if err := <-big; err != nil {
		t.Errorf("the first queued Reserve = %v, want nil", err)
	}
	if err := <-small; !errors.Is(err, stock.ErrSoldOut) {
		t.Errorf("the second queued Reserve = %v, want ErrSoldOut: it went out after the first", err)
	}
	if err := <-cancel; err != nil {
		t.Errorf("the queued Cancel = %v", err)
	}
	if got, want := l.sent(), [][]string{{"big", "small", "earlier"}}; !slices.EqualFunc(got, want, slices.Equal) {
		t.Errorf("pipelines %v, want %v", got, want)
	}
	wantLevels(t, inv, sku, stock.Levels{Available: 1, Held: 2})
}

// A queued call returns when its context ends, with the error that says it
// may still happen; it does, and a retry with the same order changes
// nothing. Close waits for it.
func TestBatchQueuedCallContextEnds(t *testing.T) {
	t.Parallel()
	rdb := shared(t)
	l := newLanes()
	rdb.AddHook(l)
	inv := stock.New(rdb)
	ctx := context.Background()
	sku := testSKU(t, "shirt")
	mustSet(t, inv, sku, 5)

	letGo := l.hold(t, inv, sku)
	cctx, cancel := context.WithCancel(ctx)
	errc := queue(t, inv, 1, func() error { return inv.Reserve(cctx, sku, "o1", 2, time.Minute) })
	cancel()
	if err := <-errc; !errors.Is(err, context.Canceled) || !strings.Contains(err.Error(), "may still happen") {
		t.Errorf("the queued Reserve when its context ended = %v, want context.Canceled", err)
	}
	letGo()
	if err := inv.Close(); err != nil {
		t.Fatal(err)
	}

	inv = newInventory(t, rdb)
	if err := inv.Reserve(ctx, sku, "o1", 2, time.Minute); err != nil {
		t.Fatalf("the retried Reserve: %v", err)
	}
	wantLevels(t, inv, sku, stock.Levels{Available: 3, Held: 2})
}

// The connection of a batch breaks after the first reply. Without retries
// each call gets an error (go-redis marks every command of a failed
// pipeline, the first one too, which did take effect); with go-redis's own
// retries the pipeline goes again whole, which the calls are harmless to
// run twice. Either way, the calls retried hold their units once.
func TestBatchConnectionBreaks(t *testing.T) {
	t.Parallel()
	for _, retries := range []int{-1, 3} {
		t.Run(fmt.Sprint("MaxRetries=", retries), func(t *testing.T) {
			t.Parallel()
			p := newCutProxy(t, redisAddr)
			rdb := redis.NewClient(&redis.Options{Addr: p.addr, MaxRetries: retries})
			t.Cleanup(func() { rdb.Close() })
			l := newLanes()
			l.before = func() { p.cutAfter("*3\r\n:0\r\n:0\r\n:1\r\n") } // the first DONE reply
			rdb.AddHook(l)
			inv := newInventory(t, rdb)
			ctx := context.Background()
			sku := testSKU(t, "shirt")
			mustSet(t, inv, sku, 10)
			if err := inv.Reserve(ctx, sku, "warm-up", 1, time.Minute); err != nil { // the script loaded
				t.Fatal(err)
			}

			letGo := l.hold(t, inv, sku)
			var errs []<-chan error
			for i := range 3 {
				errs = append(errs, queue(t, inv, i+1, func() error {
					return inv.Reserve(ctx, sku, fmt.Sprint("o", i), 1, time.Minute)
				}))
			}
			letGo()
			for i, errc := range errs {
				err := <-errc
				switch {
				case retries > 0 && err != nil:
					t.Errorf("Reserve o%d = %v, want nil: go-redis sends the pipeline again", i, err)
				case retries < 0 && i > 0 && err == nil:
					t.Errorf("Reserve o%d = nil, want the broken connection's error", i)
				}
			}
			if got := l.sent(); len(got) < 1 || !slices.Equal(got[0], []string{"o0", "o1", "o2"}) {
				t.Errorf("pipelines %v, want o0, o1, o2 together first", got)
			}
			for i := range 3 {
				if err := inv.Reserve(ctx, sku, fmt.Sprint("o", i), 1, time.Minute); err != nil {
					t.Errorf("the retried Reserve o%d: %v", i, err)
				}
			}
			wantLevels(t, inv, sku, stock.Levels{Available: 6, Held: 4})
		})
	}
}

// On a Cluster, one batch holds skus of several slots, and go-redis sends
// each to its node.
func TestBatchCluster(t *testing.T) {
	t.Parallel()
	cluster := redistest.NewCluster(t, 3, 0)
	rdb := cluster.Client()
	l := newLanes()
	rdb.AddHook(l)
	inv := newInventory(t, rdb)
	ctx := context.Background()
	skus := []string{"hat", "{shop-7}shirt", "a}b", "socks"}
	for _, sku := range skus {
		mustSet(t, inv, sku, 5)
	}

	letGo := l.hold(t, inv, skus[0])
	var errs []<-chan error
	for i, sku := range skus {
		errs = append(errs, queue(t, inv, i+1, func() error { return inv.Reserve(ctx, sku, "o1", 2, time.Minute) }))
	}
	letGo()
	for i, errc := range errs {
		if err := <-errc; err != nil {
			t.Errorf("Reserve of %q in a batch = %v", skus[i], err)
		}
	}
	// (A node that lacks the script gets its own again, with EVAL.)
	if got := l.sent(); len(got) < 1 || len(got[0]) != len(skus) {
		t.Errorf("pipelines %v, want the four Reserves in one first", got)
	}
	for _, sku := range skus {
		wantLevels(t, inv, sku, stock.Levels{Available: 3, Held: 2})
	}
}

// cutProxy forwards connections to a Redis, and can close one right after
// it has forwarded a given reply.
type cutProxy struct {
	addr  string
	after atomic.Pointer[string] // the reply to cut after, nil for none
}

func newCutProxy(t *testing.T, upstream string) *cutProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &cutProxy{addr: ln.Addr().String()}
	var wg sync.WaitGroup
	var mu sync.Mutex
	var conns []net.Conn
	t.Cleanup(func() {
		ln.Close()
		mu.Lock()
		for _, c := range conns {
			c.Close()
		}
		mu.Unlock()
		wg.Wait()
	})
	wg.Go(func() {
		for {
			client, err := ln.Accept()
			if err != nil {
				return
			}
			server, err := net.Dial("tcp", upstream)
			if err != nil {
				client.Close()
				continue
			}
			mu.Lock()
			conns = append(conns, client, server)
			mu.Unlock()
			wg.Go(func() {
				_, _ = io.Copy(server, client)
				server.Close()
			})
			wg.Go(func() {
				p.forwardReplies(client, server)
				client.Close()
				server.Close()
			})
		}
	})
	return p
}

// cutAfter makes the proxy close the connection that next forwards reply,
// right after it.
func (p *cutProxy) cutAfter(reply string) { p.after.Store(&reply) }

func (p *cutProxy) forwardReplies(client, server net.Conn) {
	buf := make([]byte, 4096)
	for {
		n, err := server.Read(buf)
		if n > 0 {
			chunk, cut := buf[:n], false
			if after := p.after.Load(); after != nil {
				if i := strings.Index(string(chunk), *after); i >= 0 && p.after.CompareAndSwap(after, nil) {
					chunk, cut = chunk[:i+len(*after)], true
				}
			}
			if _, werr := client.Write(chunk); werr != nil || cut {
				return
			}
		}
		if err != nil {
			return
		}
	}
}
