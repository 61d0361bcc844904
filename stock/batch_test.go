package stock_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/dlock-go/dlock/internal/testenv"
	"github.com/dlock-go/dlock/redistest"
	"github.com/dlock-go/dlock/stock"
)

// lanes is a go-redis hook that holds up the Inventory's lanes: while
// armed, a script sent alone waits until release, then fails without
// reaching Redis, so that the calls after it queue. It also records the
// orders of every batch sent, in the order sent: a pipeline of scripts, or
// a run of several calls of one sku (stock.EachWidth), alone or in a
// pipeline.
type lanes struct {
	armed   atomic.Bool
	arrived chan struct{}
	release chan struct{}
	before  func() // if set, runs before each batch goes out

	mu      sync.Mutex
	batches [][]string
}

var errLaneHeld = errors.New("test: lane held")

func newLanes() *lanes {
	return &lanes{arrived: make(chan struct{}, 100), release: make(chan struct{})}
}

// withLanes returns a client of the shared server with scripts loaded (so
// that none goes again with EVAL), its lanes hook, and an Inventory on it.
func withLanes(t *testing.T, opts ...stock.Option) (*redis.Client, *lanes, *stock.Inventory) {
	t.Helper()
	rdb := testenv.Client(t)
	l := newLanes()
	rdb.AddHook(l)
	if err := stock.LoadScripts(context.Background(), rdb); err != nil {
		t.Fatal(err)
	}
	return rdb, l, newInventory(t, rdb, opts...)
}

func (l *lanes) DialHook(next redis.DialHook) redis.DialHook { return next }

func (l *lanes) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if !isScript(cmd) {
			return next(ctx, cmd)
		}
		if !l.armed.Load() {
			if stock.EachWidth(cmd.Args()) > 0 {
				l.record(ordersOf(cmd))
			}
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
				orders = append(orders, ordersOf(cmd)...)
			}
		}
		if len(orders) > 0 {
			l.record(orders)
		}
		return next(ctx, cmds)
	}
}

func (l *lanes) record(orders []string) {
	l.mu.Lock()
	l.batches = append(l.batches, orders)
	l.mu.Unlock()
	if l.before != nil {
		l.before()
	}
}

// ordersOf returns the orders a script is for: one, or those of a run of a
// *_each.lua script. They come after the KEYS and the header (the
// retention, the resend window and the number of skus).
func ordersOf(cmd redis.Cmder) []string {
	args := cmd.Args()
	keys, _ := strconv.Atoi(fmt.Sprint(args[2]))
	first := 3 + keys + 3
	width := stock.EachWidth(args)
	if width == 0 {
		return []string{fmt.Sprint(args[first])}
	}
	var orders []string
	for i := first; i < len(args); i += width {
		orders = append(orders, fmt.Sprint(args[i]))
	}
	return orders
}

// sent returns the orders of each batch sent so far.
func (l *lanes) sent() [][]string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.batches)
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
	testenv.Eventually(t, 10*time.Second, fmt.Sprintf("call %d queued", n), func() bool { return stock.QueuedCalls(inv) == n })
	return errc
}

// Calls that queue while the lanes are busy go out as one pipeline, in the
// order they came, the two Reserves of the sku as one script: the first
// takes two of the last three units, the second finds too few.
func TestBatchKeepsOrder(t *testing.T) {
	t.Parallel()
	_, l, inv := withLanes(t)
	ctx := context.Background()
	sku := testSKU(t, "shirt")
	mustSet(t, inv, sku, 3)
	mustReserve(t, inv, sku, "earlier", 1, time.Minute)

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
		t.Errorf("batches %v, want %v", got, want)
	}
	wantLevels(t, inv, sku, stock.Levels{Available: 1, Held: 2})
}

// A queued call returns when its context ends, with the error that says its
// outcome is unknown (it may still happen); it does, and a retry with the same order changes
// nothing. Close waits for it.
func TestBatchQueuedCallContextEnds(t *testing.T) {
	t.Parallel()
	rdb := testenv.Client(t)
	l := newLanes()
	rdb.AddHook(l)
	inv := newInventory(t, rdb)
	ctx := context.Background()
	sku := testSKU(t, "shirt")
	mustSet(t, inv, sku, 5)

	letGo := l.hold(t, inv, sku)
	cctx, cancel := context.WithCancel(ctx)
	errc := queue(t, inv, 1, func() error { return inv.Reserve(cctx, sku, "o1", 2, time.Minute) })
	cancel()
	if err := <-errc; !errors.Is(err, context.Canceled) || !errors.Is(err, stock.ErrOutcomeUnknown) {
		t.Errorf("the queued Reserve when its context ended = %v, want context.Canceled and ErrOutcomeUnknown", err)
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

// The connection of a batch breaks after the first reply: a pipeline of
// three Reserves of three skus, or one script making three Reserves of one
// sku. Without retries each call gets an error (go-redis marks every command
// of a failed pipeline, the first one too, which did take effect; a script
// whose reply was cut fails whole, and did take effect); with go-redis's own
// retries the batch goes again whole, which the calls are harmless to run
// twice. Either way, the calls retried hold their units once.
func TestBatchConnectionBreaks(t *testing.T) {
	t.Parallel()
	for _, skus := range []int{3, 1} {
		for _, retries := range []int{-1, 3} {
			t.Run(fmt.Sprintf("skus=%d/MaxRetries=%d", skus, retries), func(t *testing.T) {
				t.Parallel()
				p := newCutProxy(t, redisAddr)
				rdb := redis.NewClient(&redis.Options{Addr: p.addr, MaxRetries: retries})
				t.Cleanup(func() { rdb.Close() })
				l := newLanes()
				l.before = func() { p.cutAfter("*3\r\n:0\r\n:0\r\n:1\r\n") } // the first DONE reply
				rdb.AddHook(l)
				inv := newInventory(t, rdb)
				ctx := context.Background()
				if err := stock.LoadScripts(ctx, rdb); err != nil {
					t.Fatal(err)
				}
				names := make([]string, skus)
				for i := range names {
					names[i] = testSKU(t, fmt.Sprint("shirt-", i))
					mustSet(t, inv, names[i], 10)
				}
				sku := func(i int) string { return names[i%skus] }

				letGo := l.hold(t, inv, sku(0))
				var errs []<-chan error
				for i := range 3 {
					errs = append(errs, queue(t, inv, i+1, func() error {
						return inv.Reserve(ctx, sku(i), fmt.Sprint("o", i), 1, time.Minute)
					}))
				}
				letGo()
				for i, errc := range errs {
					err := <-errc
					switch {
					case retries > 0 && err != nil:
						t.Errorf("Reserve o%d = %v, want nil: go-redis sends the batch again", i, err)
					case retries < 0 && (i > 0 || skus == 1) && err == nil:
						t.Errorf("Reserve o%d = nil, want the broken connection's error", i)
					}
				}
				if got := l.sent(); len(got) < 1 || !slices.Equal(got[0], []string{"o0", "o1", "o2"}) {
					t.Errorf("batches %v, want o0, o1, o2 together first", got)
				}
				for i := range 3 {
					if err := inv.Reserve(ctx, sku(i), fmt.Sprint("o", i), 1, time.Minute); err != nil {
						t.Errorf("the retried Reserve o%d: %v", i, err)
					}
				}
				for i := range skus {
					wantLevels(t, inv, sku(i), stock.Levels{Available: int64(10 - 3/skus), Held: int64(3 / skus)})
				}
			})
		}
	}
}

// The Reserves of one sku in one batch go out as one script, which makes
// each as Reserve alone would, one after the other in the order they
// came: a retry of an order in the same batch holds once, another quantity
// for it is a conflict, an order that finds too few is sold out and the
// ones after it may still fit. Calls of other skus in the batch go beside
// it.
func TestBatchReservesOfOneSKU(t *testing.T) {
	t.Parallel()
	_, l, inv := withLanes(t)
	ctx := context.Background()
	sku, other := testSKU(t, "shirt"), testSKU(t, "socks")
	mustSet(t, inv, sku, 4)
	mustSet(t, inv, other, 1)
	mustReserve(t, inv, sku, "earlier", 1, time.Millisecond)
	time.Sleep(5 * time.Millisecond) // past the hold, by the server's clock too

	letGo := l.hold(t, inv, sku)
	calls := []struct {
		sku, order string
		qty        int64
		want       error
	}{
		{sku, "a", 2, nil},
		{other, "a", 1, nil},
		{sku, "a", 2, nil},               // a retry in the same batch: held once
		{sku, "a", 1, stock.ErrConflict}, // another quantity
		{sku, "b", 3, stock.ErrSoldOut},  // 2 left: the expired hold came back first
		{sku, "c", 2, nil},
		{sku, "d", 1, stock.ErrSoldOut},
	}
	var errs []<-chan error
	for i, c := range calls {
		errs = append(errs, queue(t, inv, i+1, func() error { return inv.Reserve(ctx, c.sku, c.order, c.qty, time.Minute) }))
	}
	letGo()
	for i, errc := range errs {
		if err := <-errc; !errors.Is(err, calls[i].want) || (err == nil) != (calls[i].want == nil) {
			t.Errorf("Reserve %d (%d of %q for %q) = %v, want %v", i, calls[i].qty, calls[i].sku, calls[i].order, err, calls[i].want)
		}
	}
	// The Reserves of sku go as one script where the first came, then other's.
	if got, want := l.sent(), [][]string{{"a", "a", "a", "b", "c", "d", "a"}}; !slices.EqualFunc(got, want, slices.Equal) {
		t.Errorf("batches %v, want %v", got, want)
	}
	wantLevels(t, inv, sku, stock.Levels{Available: 0, Held: 4})
	wantLevels(t, inv, other, stock.Levels{Available: 0, Held: 1})
	for _, order := range []string{"a", "c"} {
		if err := inv.Commit(ctx, sku, order); err != nil {
			t.Errorf("Commit %q: %v", order, err)
		}
	}
	for _, order := range []string{"b", "d", "earlier"} {
		if err := inv.Commit(ctx, sku, order); !errors.Is(err, stock.ErrNoReservation) {
			t.Errorf("Commit %q = %v, want ErrNoReservation", order, err)
		}
	}
	wantLevels(t, inv, sku, stock.Levels{Available: 0, Held: 0, Sold: 4})
}

// The Commits and Cancels of one sku in one batch go out as one script,
// which makes each as Commit or Cancel alone would, in the order they came.
func TestBatchSettlesOfOneSKU(t *testing.T) {
	t.Parallel()
	_, l, inv := withLanes(t)
	ctx := context.Background()
	sku := testSKU(t, "shirt")
	mustSet(t, inv, sku, 10)
	for i, order := range []string{"a", "b", "c"} {
		mustReserve(t, inv, sku, order, int64(i+1), time.Minute)
	}

	letGo := l.hold(t, inv, sku)
	commit := func(order string) func() error { return func() error { return inv.Commit(ctx, sku, order) } }
	cancel := func(order string) func() error { return func() error { return inv.Cancel(ctx, sku, order) } }
	calls := []struct {
		name string
		call func() error
		want error
	}{
		{"Commit a", commit("a"), nil},
		{"Cancel b", cancel("b"), nil},
		{"Commit a again", commit("a"), nil}, // a retry in the same batch
		{"Cancel a", cancel("a"), stock.ErrNoReservation},
		{"Commit z", commit("z"), stock.ErrNoReservation}, // never reserved
		{"Cancel c", cancel("c"), nil},
		{"Commit c", commit("c"), stock.ErrNoReservation},
	}
	var errs []<-chan error
	for i, c := range calls {
		errs = append(errs, queue(t, inv, i+1, c.call))
	}
	letGo()
	for i, errc := range errs {
		if err := <-errc; !errors.Is(err, calls[i].want) || (err == nil) != (calls[i].want == nil) {
			t.Errorf("%s = %v, want %v", calls[i].name, err, calls[i].want)
		}
	}
	if got, want := l.sent(), [][]string{{"a", "b", "a", "a", "z", "c", "c"}}; !slices.EqualFunc(got, want, slices.Equal) {
		t.Errorf("batches %v, want %v", got, want)
	}
	wantLevels(t, inv, sku, stock.Levels{Available: 9, Held: 0, Sold: 1})
}

// The Reserves of one sku in one batch, made by one script, each get the
// error a Reserve alone would: a sku never set, or a key of the sku that
// holds another type (the holds, which the script writes first without
// reading them when no hold is due); and nothing changes.
func TestBatchReservesOfOneSKUBadKeys(t *testing.T) {
	t.Parallel()
	prefix := testenv.NewKey(t)
	rdb, l, inv := withLanes(t, stock.WithPrefix(prefix))
	ctx := context.Background()
	holds := badHolds(t, rdb, inv, prefix)

	letGo := l.hold(t, inv, "shirt")
	var wrong, unknown []<-chan error
	for i := range 2 {
		wrong = append(wrong, queue(t, inv, 2*i+1, func() error { return inv.Reserve(ctx, "shirt", fmt.Sprint("o", i+2), 1, time.Minute) }))
		unknown = append(unknown, queue(t, inv, 2*i+2, func() error { return inv.Reserve(ctx, "hat", fmt.Sprint("o", i+2), 1, time.Minute) }))
	}
	letGo()
	for i := range 2 {
		if err := <-wrong[i]; !errors.Is(err, stock.ErrWrongType) || !strings.Contains(err.Error(), holds) {
			t.Errorf("Reserve %d of shirt = %v, want ErrWrongType naming %s", i, err, holds)
		}
		if err := <-unknown[i]; !errors.Is(err, stock.ErrUnknownSKU) {
			t.Errorf("Reserve %d of hat = %v, want ErrUnknownSKU", i, err)
		}
	}
	if got, want := l.sent(), [][]string{{"o2", "o3", "o2", "o3"}}; !slices.EqualFunc(got, want, slices.Equal) {
		t.Errorf("batches %v, want %v", got, want)
	}
	level := prefix + "{shirt}:level"
	if got, err := rdb.HGetAll(ctx, level).Result(); err != nil || got["available"] != "4" || got["held"] != "1" {
		t.Errorf("HGETALL %s = %v, %v; want it as it was: available 4, held 1", level, got, err)
	}
	if got, err := rdb.HGetAll(ctx, prefix+"{shirt}:order").Result(); err != nil || len(got) != 1 {
		t.Errorf("the orders of shirt = %v, %v; want o1's alone", got, err)
	}
}

// On a Cluster, one batch holds skus of several slots, and go-redis sends
// each to its node; the two Reserves of each sku go as one script.
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
		errs = append(errs, queue(t, inv, 2*i+1, func() error { return inv.Reserve(ctx, sku, "o1", 2, time.Minute) }))
		errs = append(errs, queue(t, inv, 2*i+2, func() error { return inv.Reserve(ctx, sku, "o2", 2, time.Minute) }))
	}
	letGo()
	for i, errc := range errs {
		if err := <-errc; err != nil {
			t.Errorf("Reserve %d of %q in a batch = %v", i%2+1, skus[i/2], err)
		}
	}
	// (A node that lacks the script gets its own again, with EVAL.)
	if got := l.sent(); len(got) < 1 || len(got[0]) != 2*len(skus) {
		t.Errorf("batches %v, want the eight Reserves in one first", got)
	}
	for _, sku := range skus {
		wantLevels(t, inv, sku, stock.Levels{Available: 1, Held: 4})
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
