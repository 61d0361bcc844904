package stock_test

import (
	"bytes"
	"context"
	"errors"
	"net"
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

// spy counts the scripts a client writes to Redis: each copy go-redis
// sends of a call.
type spy struct{ scripts atomic.Int64 }

func (s *spy) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	c, err := (&net.Dialer{}).DialContext(ctx, network, addr)
	if err != nil {
		return nil, err
	}
	return &spyConn{Conn: c, s: s}, nil
}

type spyConn struct {
	net.Conn
	s *spy
}

func (c *spyConn) Write(p []byte) (int, error) {
	n, err := c.Conn.Write(p)
	c.s.scripts.Add(int64(bytes.Count(p[:n], []byte("\r\nevalsha\r\n")) + bytes.Count(p[:n], []byte("\r\neval\r\n"))))
	return n, err
}

// faultEnv is a server of a test's own, and an Inventory on it that sets
// up and checks (its client has MaxRetries -1: it never resends).
type faultEnv struct {
	t      *testing.T
	srv    *redistest.Server
	direct *stock.Inventory
}

func newFaultEnv(t *testing.T) *faultEnv {
	srv := redistest.NewServer(t)
	direct := newInventory(t, srv.Client(func(o *redis.Options) { o.MaxRetries = -1 }))
	return &faultEnv{t: t, srv: srv, direct: direct}
}

// pause pauses the server until Resume, or the end of the test.
func (e *faultEnv) pause() {
	e.t.Helper()
	e.srv.Pause()
	e.t.Cleanup(e.srv.Resume) // a test that fails while paused ends
}

// spied returns an Inventory on a client of go-redis's default options
// (MaxRetries 3, ReadTimeout 5 s) and the spy of its writes; the client
// has the scripts loaded and a connection open.
func (e *faultEnv) spied() (*stock.Inventory, *spy, *redis.Client) {
	e.t.Helper()
	return e.spiedWith(func(*redis.Options) {})
}

// bystander returns an Inventory like spied, whose client sends each call
// once and waits for its answer as long as it takes: it makes calls that
// go between the copies of another's.
func (e *faultEnv) bystander() (*stock.Inventory, *spy, *redis.Client) {
	e.t.Helper()
	return e.spiedWith(func(o *redis.Options) { o.MaxRetries, o.ReadTimeout = -1, -1 })
}

func (e *faultEnv) spiedWith(opt func(*redis.Options)) (*stock.Inventory, *spy, *redis.Client) {
	e.t.Helper()
	s := &spy{}
	rdb := e.srv.Client(func(o *redis.Options) { o.Dialer = s.dial; opt(o) })
	if err := stock.LoadScripts(context.Background(), rdb); err != nil {
		e.t.Fatal(err)
	}
	return newInventory(e.t, rdb), s, rdb
}

// warm opens n connections of rdb, left idle in its pool.
func warm(t *testing.T, rdb *redis.Client, n int) {
	t.Helper()
	var wg sync.WaitGroup
	for range n {
		wg.Go(func() {
			// Each holds a connection for 200 ms (waiting for a replica
			// there is not), so that they overlap.
			if err := rdb.Wait(context.Background(), 1, 200*time.Millisecond).Err(); err != nil {
				t.Errorf("warming a connection: %v", err)
			}
		})
	}
	wg.Wait()
	if idle := rdb.PoolStats().IdleConns; idle < uint32(n) {
		t.Fatalf("%d connections idle, want %d", idle, n)
	}
}

// start runs call in a goroutine and waits until its first copy is
// written to Redis; it returns the call's error.
func start(t *testing.T, what string, s *spy, copies int64, call func() error) <-chan error {
	t.Helper()
	before := s.scripts.Load()
	errc := make(chan error, 1)
	go func() { errc <- call() }()
	testenv.Eventually(t, 10*time.Second, what+" sent", func() bool { return s.scripts.Load() >= before+copies })
	return errc
}

// A call in flight while Redis is paused past go-redis's ReadTimeout is sent
// two or three times, and every copy runs once Redis answers: each mutating
// call takes effect once and answers nil. One pause, every call in flight at
// once, and a batch of calls of one sku as well. A Cancel resent after the
// order reserved again does not cancel the new hold; a Delete resent after
// the sku was set again does not delete it. A call whose context ends first
// says its outcome is unknown, and takes effect once too.
func TestResentCallsTakeEffectOnce(t *testing.T) {
	t.Parallel()
	e := newFaultEnv(t)
	ctx := context.Background()
	for _, sku := range []string{"add", "take", "set", "reserve", "commit", "cancel", "delete", "late",
		"{cart}a", "{cart}b", "{cart}c", "{cart}d", "{cart}e", "{cart}f"} {
		mustSet(t, e.direct, sku, 5)
	}
	mustReserve(t, e.direct, "commit", "o", 2, time.Hour)
	mustReserve(t, e.direct, "cancel", "o", 2, time.Hour)
	for _, sku := range []string{"{cart}c", "{cart}d", "{cart}e", "{cart}f"} {
		mustReserve(t, e.direct, sku, "o", 2, time.Hour)
	}
	mustSet(t, e.direct, "merged", 10)
	mustReserve(t, e.direct, "merged", "sold", 2, time.Hour)
	mustReserve(t, e.direct, "merged", "back", 3, time.Hour)

	type call struct {
		name   string
		copies int64 // scripts in one copy
		do     func(*stock.Inventory) error
	}
	calls := []call{
		{"Add(+1)", 1, func(inv *stock.Inventory) error { return inv.Add(ctx, "add", 1) }},
		{"Add(-1)", 1, func(inv *stock.Inventory) error { return inv.Add(ctx, "take", -1) }},
		{"Set", 1, func(inv *stock.Inventory) error { return inv.Set(ctx, "set", 9) }},
		{"Reserve", 1, func(inv *stock.Inventory) error { return inv.Reserve(ctx, "reserve", "o", 2, time.Hour) }},
		{"Commit", 1, func(inv *stock.Inventory) error { return inv.Commit(ctx, "commit", "o") }},
		{"Cancel", 1, func(inv *stock.Inventory) error { return inv.Cancel(ctx, "cancel", "o") }},
		{"Delete", 1, func(inv *stock.Inventory) error { return inv.Delete(ctx, "delete") }},
		{"ReserveAll", 1, func(inv *stock.Inventory) error {
			return inv.ReserveAll(ctx, "o", map[string]int64{"{cart}a": 1, "{cart}b": 2}, time.Hour)
		}},
		{"CommitAll", 1, func(inv *stock.Inventory) error { return inv.CommitAll(ctx, "o", []string{"{cart}c", "{cart}d"}) }},
		{"CancelAll", 1, func(inv *stock.Inventory) error { return inv.CancelAll(ctx, "o", []string{"{cart}e", "{cart}f"}) }},
	}
	type inflight struct {
		call
		spy  *spy
		sent int64
		errc <-chan error
	}
	var flights []*inflight
	invs := make([]*stock.Inventory, len(calls))
	spies := make([]*spy, len(calls))
	for i := range calls {
		invs[i], spies[i], _ = e.spied()
	}
	// Other processes, for the calls that come between the copies: each
	// needs a connection open before the pause.
	other, otherSpy, _ := e.bystander()
	other2, other2Spy, _ := e.bystander()
	late, lateSpy, _ := e.spied()       // an Add whose context ends before Redis answers
	merged, mergedSpy, rdb := e.spied() // calls of one sku that go out as one batch
	l := newLanes()
	rdb.AddHook(l)
	letGo := sync.OnceFunc(l.hold(t, merged, "merged"))
	t.Cleanup(letGo) // after Resume, if the test fails before letGo
	queued := []<-chan error{
		queue(t, merged, 1, func() error { return merged.Reserve(ctx, "merged", "m1", 1, time.Hour) }),
		queue(t, merged, 2, func() error { return merged.Reserve(ctx, "merged", "m2", 2, time.Hour) }),
		queue(t, merged, 3, func() error { return merged.Commit(ctx, "merged", "sold") }),
		queue(t, merged, 4, func() error { return merged.Cancel(ctx, "merged", "back") }),
	}

	e.pause()
	paused := time.Now()
	for i, c := range calls {
		sent := spies[i].scripts.Load()
		errc := start(t, c.name, spies[i], c.copies, func() error { return c.do(invs[i]) })
		flights = append(flights, &inflight{call: c, spy: spies[i], sent: sent, errc: errc})
	}
	// After the first copies of Cancel and Delete, and before go-redis
	// sends them again: the order reserves again, the sku is set again.
	reReserve := start(t, "the second Reserve", otherSpy, 1, func() error { return other.Reserve(ctx, "cancel", "o", 2, time.Hour) })
	reSet := start(t, "the second Set", other2Spy, 1, func() error { return other2.Set(ctx, "delete", 7) })
	lateCtx, cancel := context.WithCancel(ctx)
	lateErr := start(t, "the Add whose context ends", lateSpy, 1, func() error { return late.Add(lateCtx, "late", 1) })
	cancel()
	if err := <-lateErr; !errors.Is(err, stock.ErrOutcomeUnknown) || !errors.Is(err, context.Canceled) {
		t.Errorf("an Add whose context ended before Redis answered = %v, want ErrOutcomeUnknown and context.Canceled", err)
	}
	mergedSent := mergedSpy.scripts.Load()
	letGo() // the queued calls go out as one pipeline of two merged scripts
	testenv.Eventually(t, 10*time.Second, "the merged batch sent", func() bool { return mergedSpy.scripts.Load() >= mergedSent+2 })

	time.Sleep(time.Until(paused.Add(testenv.ResendPause)))
	e.srv.Resume()

	for _, f := range flights {
		if err := <-f.errc; err != nil {
			t.Errorf("%s in flight through the pause = %v, want nil", f.name, err)
		}
		if n := f.spy.scripts.Load() - f.sent; n < 2*f.copies {
			t.Errorf("%s was sent %d times, want go-redis to send it again", f.name, n)
		}
	}
	for i, errc := range append(queued, reReserve, reSet) {
		if err := <-errc; err != nil {
			t.Errorf("call %d queued or sent between copies = %v, want nil", i, err)
		}
	}
	// go-redis sends a pipeline again only when its connection breaks, not
	// after a ReadTimeout: TestEveryCopyTwice sends one twice.
	if err := late.Close(); err != nil { // waits for the Add left behind
		t.Fatal(err)
	}

	want := map[string]stock.Levels{
		"add":     {Available: 6},
		"take":    {Available: 4},
		"set":     {Available: 9},
		"reserve": {Available: 3, Held: 2},
		"commit":  {Available: 3, Sold: 2},
		"cancel":  {Available: 3, Held: 2}, // cancelled once, then reserved again
		"delete":  {Available: 7},          // deleted once, then set again
		"late":    {Available: 6},
		"{cart}a": {Available: 4, Held: 1},
		"{cart}b": {Available: 3, Held: 2},
		"{cart}c": {Available: 3, Sold: 2},
		"{cart}d": {Available: 3, Sold: 2},
		"{cart}e": {Available: 5},
		"{cart}f": {Available: 5},
		"merged":  {Available: 5, Held: 3, Sold: 2},
	}
	for sku, w := range want {
		wantLevels(t, e.direct, sku, w)
	}
}

// Set(10) in flight while Redis is paused, and a shopper's Reserve of all
// 10 sent after its first copy: go-redis sends the Set again after its
// ReadTimeout, behind the Reserve. The resent Set must not put the 10
// reserved units back on sale (an oversell: 20 sellable of 10).
func TestResentSetDoesNotOversell(t *testing.T) {
	t.Parallel()
	e := newFaultEnv(t)
	ctx := context.Background()
	mustSet(t, e.direct, "console", 0)
	admin, adminSpy, _ := e.spied()
	shop, shopSpy, _ := e.spied()

	e.pause()
	paused := time.Now()
	sent := adminSpy.scripts.Load()
	set := start(t, "Set(10)", adminSpy, 1, func() error { return admin.Set(ctx, "console", 10) })
	reserve := start(t, "Reserve(10)", shopSpy, 1, func() error { return shop.Reserve(ctx, "console", "o1", 10, time.Hour) })
	time.Sleep(time.Until(paused.Add(testenv.ResendPause)))
	e.srv.Resume()

	if err := <-set; err != nil {
		t.Errorf("Set in flight through the pause = %v, want nil", err)
	}
	if n := adminSpy.scripts.Load() - sent; n < 2 {
		t.Errorf("Set was sent %d times, want go-redis to send it again", n)
	}
	err := <-reserve
	l := levels(t, e.direct, "console")
	if l.Available+l.Held+l.Sold != 10 {
		t.Fatalf("levels %+v after Set(10) and a Reserve of 10: %d units sellable, want 10", l, l.Available+l.Held)
	}
	switch {
	case err == nil && l != (stock.Levels{Held: 10}):
		t.Errorf("levels %+v after a Reserve of 10 that succeeded, want all 10 held", l)
	case errors.Is(err, stock.ErrSoldOut) && l != (stock.Levels{Available: 10}):
		t.Errorf("levels %+v after a Reserve of 10 that found none, want all 10 available", l)
	case err != nil && !errors.Is(err, stock.ErrSoldOut):
		t.Errorf("Reserve = %v", err)
	}
}

// An Add in flight while Redis is paused until go-redis gives up (four
// copies, one ReadTimeout each): it returns ErrOutcomeUnknown, and takes
// effect once when Redis answers. DLOCK_SLOW_FAULTS=1: about 20 s.
func TestResentCallOutcomeUnknown(t *testing.T) {
	testenv.SlowFaults(t)
	t.Parallel()
	e := newFaultEnv(t)
	ctx := context.Background()
	mustSet(t, e.direct, "shirt", 5)
	inv, s, rdb := e.spied()
	// A busy client has idle connections: go-redis sends each copy on one
	// of them at once, without a handshake that the paused Redis would not
	// answer either.
	warm(t, rdb, 4)

	e.pause()
	paused := time.Now()
	sent := s.scripts.Load()
	errc := start(t, "Add(+1)", s, 1, func() error { return inv.Add(ctx, "shirt", 1) })
	err := <-errc // go-redis gives up while Redis is paused
	t.Logf("Add returned after %v", time.Since(paused))
	e.srv.Resume()
	var netErr net.Error
	if !errors.Is(err, stock.ErrOutcomeUnknown) || !errors.As(err, &netErr) || !netErr.Timeout() {
		t.Errorf("Add past go-redis's retries = %v, want ErrOutcomeUnknown and a timeout", err)
	}
	if n := s.scripts.Load() - sent; n < 3 {
		t.Errorf("Add was sent %d times, want go-redis to send it again and again", n)
	} else {
		t.Logf("Add was sent %d times", n)
	}
	if !strings.Contains(err.Error(), `"shirt"`) {
		t.Errorf("error %q does not name the sku", err)
	}
	testenv.Eventually(t, 10*time.Second, "the copies run", func() bool {
		return len(e.srv.Client().Keys(ctx, "stock{shirt}:call:*").Val()) > 0
	})
	wantLevels(t, e.direct, "shirt", stock.Levels{Available: 6})
}

// A call that changes the stock leaves a record for the resend window, in
// its sku's slot, and no more: about a minute with go-redis's defaults.
func TestCallRecordExpires(t *testing.T) {
	t.Parallel()
	rdb := testenv.Client(t)
	inv := newInventory(t, rdb)
	ctx := context.Background()
	sku := "{" + testSKU(t, "shirt") + "}x" // a tagged sku: its record is in the tag's slot
	mustSet(t, inv, sku, 5)
	keys, err := rdb.Keys(ctx, "stock{"+strings.Trim(sku, "{}x")+"}:call:*").Result()
	if err != nil || len(keys) != 1 {
		t.Fatalf("records %q, %v; want one", keys, err)
	}
	ttl := rdb.PTTL(ctx, keys[0]).Val()
	if ttl <= 0 || ttl > 2*time.Minute {
		t.Errorf("the record lasts %v, want about a minute", ttl)
	}
	if redistest.Slot(keys[0]) != redistest.Slot(strings.Trim(sku, "{}x")) {
		t.Errorf("record %q is not in the slot of sku %q", keys[0], sku)
	}
	wantLevels(t, inv, sku, stock.Levels{Available: 5}) // a read leaves none
	if n := len(rdb.Keys(ctx, "stock{"+strings.Trim(sku, "{}x")+"}:call:*").Val()); n != 1 {
		t.Errorf("%d records after a read, want 1", n)
	}
}

// twice is a go-redis hook that sends every script, and every pipeline of
// them, twice, as go-redis does when a connection breaks before the reply;
// the caller gets the second copy's reply.
type twice struct{}

func (twice) DialHook(next redis.DialHook) redis.DialHook { return next }

func (twice) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if isScript(cmd) {
			_ = next(ctx, cmd)
		}
		return next(ctx, cmd)
	}
}

func (twice) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		_ = next(ctx, cmds)
		return next(ctx, cmds)
	}
}

// Every call that changes the stock, its script run twice, alone or in a
// batch of calls of one sku: one effect, and the answer of the first copy.
func TestEveryCopyTwice(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	inv := newInventory(t, testenv.Client(t))
	rdb := testenv.Client(t)
	if err := stock.LoadScripts(ctx, rdb); err != nil {
		t.Fatal(err)
	}
	l := newLanes()
	rdb.AddHook(l) // outermost: a held lane sends nothing
	rdb.AddHook(twice{})
	dup := newInventory(t, rdb)
	tag := "{" + testenv.NewKey(t) + "}"
	sku := func(name string) string { return tag + name }
	for _, name := range []string{"add", "take", "reserve", "commit", "cancel", "a", "b", "merged"} {
		mustSet(t, inv, sku(name), 5)
	}
	mustReserve(t, inv, sku("commit"), "o", 2, time.Hour)
	mustReserve(t, inv, sku("cancel"), "o", 2, time.Hour)
	mustReserve(t, inv, sku("merged"), "sold", 1, time.Hour)

	check := func(what string, err error) {
		t.Helper()
		if err != nil {
			t.Errorf("%s sent twice = %v, want nil", what, err)
		}
	}
	check("Add(+1)", dup.Add(ctx, sku("add"), 1))
	check("Add(-1)", dup.Add(ctx, sku("take"), -1))
	if err := dup.Add(ctx, sku("take"), -5); !errors.Is(err, stock.ErrSoldOut) {
		t.Errorf("Add(-5) of 4 sent twice = %v, want ErrSoldOut", err)
	}
	check("Set", dup.Set(ctx, sku("set"), 3))
	check("Reserve", dup.Reserve(ctx, sku("reserve"), "o", 2, time.Hour))
	check("Commit", dup.Commit(ctx, sku("commit"), "o"))
	check("Cancel", dup.Cancel(ctx, sku("cancel"), "o"))
	check("ReserveAll", dup.ReserveAll(ctx, "o", map[string]int64{sku("a"): 1, sku("b"): 2}, time.Hour))
	check("CommitAll", dup.CommitAll(ctx, "o", []string{sku("a")}))
	check("CancelAll", dup.CancelAll(ctx, "o", []string{sku("b")}))
	mustSet(t, inv, sku("gone"), 1)
	check("Delete", dup.Delete(ctx, sku("gone")))
	if _, err := inv.Levels(ctx, sku("gone")); !errors.Is(err, stock.ErrUnknownSKU) {
		t.Errorf("Levels after Delete = %v, want ErrUnknownSKU", err)
	}

	// A batch of one sku's calls, as two merged scripts in one pipeline.
	letGo := l.hold(t, dup, sku("merged"))
	results := []<-chan error{
		queue(t, dup, 1, func() error { return dup.Reserve(ctx, sku("merged"), "m1", 1, time.Hour) }),
		queue(t, dup, 2, func() error { return dup.Reserve(ctx, sku("merged"), "m2", 4, time.Hour) }),
		queue(t, dup, 3, func() error { return dup.Commit(ctx, sku("merged"), "sold") }),
	}
	letGo()
	for i, errc := range results {
		err := <-errc
		if i == 1 {
			if !errors.Is(err, stock.ErrSoldOut) {
				t.Errorf("the batch's second Reserve = %v, want ErrSoldOut", err)
			}
			continue
		}
		check("a call of the batch", err)
	}

	for name, want := range map[string]stock.Levels{
		"add":     {Available: 6},
		"take":    {Available: 4},
		"set":     {Available: 3},
		"reserve": {Available: 3, Held: 2},
		"commit":  {Available: 3, Sold: 2},
		"cancel":  {Available: 5},
		"a":       {Available: 4, Sold: 1},
		"b":       {Available: 5},
		"merged":  {Available: 3, Held: 1, Sold: 1},
	} {
		wantLevels(t, inv, sku(name), want)
	}
}

// between is a go-redis hook that sends each script twice, as go-redis
// does when the first copy's reply is late, and runs another process's
// call (then, once) between the two copies.
type between struct {
	mu   sync.Mutex
	then func()
}

func (b *between) DialHook(next redis.DialHook) redis.DialHook { return next }

func (b *between) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if !isScript(cmd) {
			return next(ctx, cmd)
		}
		_ = next(ctx, cmd)
		b.mu.Lock()
		then := b.then
		b.then = nil
		b.mu.Unlock()
		if then != nil {
			then()
		}
		return next(ctx, cmd)
	}
}

func (b *between) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

// A copy of a call that runs after another process's call finds the first
// copy's record: it neither undoes the other call nor does its own twice,
// and answers as the first copy did.
func TestCopyAfterAnotherCall(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	rdb := testenv.Client(t)
	if err := stock.LoadScripts(ctx, rdb); err != nil {
		t.Fatal(err)
	}
	hook := &between{}
	rdb.AddHook(hook)
	prefix := testenv.NewKey(t)
	// The caller's Inventory, whose calls go twice; short retention, so
	// that outcomes are forgotten between the copies.
	inv := newInventory(t, rdb, stock.WithPrefix(prefix), stock.WithRetention(time.Millisecond))
	other := newInventory(t, testenv.Client(t), stock.WithPrefix(prefix), stock.WithRetention(time.Millisecond))
	mustSet(t, other, "set", 0)
	mustSet(t, other, "cancel", 5)
	mustReserve(t, other, "cancel", "o", 2, time.Hour)
	mustSet(t, other, "delete", 5)
	mustSet(t, other, "reserve", 5)
	mustSet(t, other, "commit", 5)
	mustReserve(t, other, "commit", "o", 2, time.Hour)
	mustSet(t, other, "take", 5)

	tests := []struct {
		name string
		call func() error
		then func() error // the other process's call, between the copies
		sku  string
		want stock.Levels
	}{
		{"Set(10), then a Reserve of 10",
			func() error { return inv.Set(ctx, "set", 10) },
			func() error { return other.Reserve(ctx, "set", "shopper", 10, time.Hour) },
			"set", stock.Levels{Held: 10}},
		{"Cancel, then the order reserves again",
			func() error { return inv.Cancel(ctx, "cancel", "o") },
			func() error { return other.Reserve(ctx, "cancel", "o", 2, time.Hour) },
			"cancel", stock.Levels{Available: 3, Held: 2}},
		{"Reserve, then the order cancels",
			func() error { return inv.Reserve(ctx, "reserve", "o", 2, time.Hour) },
			func() error { return other.Cancel(ctx, "reserve", "o") },
			"reserve", stock.Levels{Available: 5}},
		{"Commit, then its outcome is forgotten",
			func() error { return inv.Commit(ctx, "commit", "o") },
			func() error {
				time.Sleep(5 * time.Millisecond)      // past the retention
				_, err := other.Levels(ctx, "commit") // which forgets the outcome
				return err
			},
			"commit", stock.Levels{Available: 3, Sold: 2}},
		{"Add(-1), then another Add(-1)",
			func() error { return inv.Add(ctx, "take", -1) },
			func() error { return other.Add(ctx, "take", -1) },
			"take", stock.Levels{Available: 3}},
		{"Delete, then the sku is set again",
			func() error { return inv.Delete(ctx, "delete") },
			func() error { return other.Set(ctx, "delete", 7) },
			"delete", stock.Levels{Available: 7}},
	}
	for _, tt := range tests {
		var thenErr error
		hook.mu.Lock()
		hook.then = func() { thenErr = tt.then() }
		hook.mu.Unlock()
		if err := tt.call(); err != nil {
			t.Errorf("%s: the call = %v, want nil: its first copy did it", tt.name, err)
		}
		if thenErr != nil {
			t.Errorf("%s: the other call = %v", tt.name, thenErr)
		}
		wantLevels(t, other, tt.sku, tt.want)
	}
}
