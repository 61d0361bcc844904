package stock_test

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/dlock-go/dlock/internal/testenv"
	"github.com/dlock-go/dlock/redistest"
	"github.com/dlock-go/dlock/stock"
)

// counter counts the commands a client sends, scripts and pipelines alike.
type counter struct{ n atomic.Int64 }

func (c *counter) DialHook(next redis.DialHook) redis.DialHook { return next }

func (c *counter) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		c.n.Add(1)
		return next(ctx, cmd)
	}
}

func (c *counter) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		c.n.Add(int64(len(cmds)))
		return next(ctx, cmds)
	}
}

// Bad input is an error that names what is wrong, and it never reaches Redis.
func TestBadInput(t *testing.T) {
	t.Parallel()
	rdb := testenv.Client(t)
	var sent counter
	rdb.AddHook(&sent)
	inv := newInventory(t, rdb)
	ctx := context.Background()
	const sku, order, hold = "shirt", "o1", time.Minute
	tests := []struct {
		name string
		err  error
		want error
	}{
		{"empty sku", inv.Reserve(ctx, "", order, 1, hold), stock.ErrInvalidSKU},
		{"empty order", inv.Reserve(ctx, sku, "", 1, hold), stock.ErrInvalidOrder},
		{"zero qty", inv.Reserve(ctx, sku, order, 0, hold), stock.ErrInvalidQuantity},
		{"negative qty", inv.Reserve(ctx, sku, order, -1, hold), stock.ErrInvalidQuantity},
		{"qty past max", inv.Reserve(ctx, sku, order, stock.MaxQuantity+1, hold), stock.ErrInvalidQuantity},
		{"zero hold", inv.Reserve(ctx, sku, order, 1, 0), stock.ErrInvalidHold},
		{"negative hold", inv.Reserve(ctx, sku, order, 1, -time.Second), stock.ErrInvalidHold},
		{"hold under 1ms", inv.Reserve(ctx, sku, order, 1, time.Microsecond), stock.ErrInvalidHold},
		{"hold past max", inv.Reserve(ctx, sku, order, 1, stock.MaxDuration+1), stock.ErrInvalidHold},
		{"empty cart", inv.ReserveAll(ctx, order, nil, hold), stock.ErrInvalidSKU},
		{"cart with an empty sku", inv.ReserveAll(ctx, order, map[string]int64{"": 1, sku: 1}, hold), stock.ErrInvalidSKU},
		{"cart with a zero qty", inv.ReserveAll(ctx, order, map[string]int64{"a": 1, sku: 0}, hold), stock.ErrInvalidQuantity},
		{"commit, empty sku", inv.Commit(ctx, "", order), stock.ErrInvalidSKU},
		{"commit, empty order", inv.Commit(ctx, sku, ""), stock.ErrInvalidOrder},
		{"cancel, empty order", inv.Cancel(ctx, sku, ""), stock.ErrInvalidOrder},
		{"commit all, no sku", inv.CommitAll(ctx, order, nil), stock.ErrInvalidSKU},
		{"cancel all, a sku twice", inv.CancelAll(ctx, order, []string{sku, sku}), stock.ErrInvalidSKU},
		{"set negative", inv.Set(ctx, sku, -1), stock.ErrInvalidQuantity},
		{"set past max", inv.Set(ctx, sku, stock.MaxQuantity+1), stock.ErrInvalidQuantity},
		{"set, empty sku", inv.Set(ctx, "", 1), stock.ErrInvalidSKU},
		{"add past max", inv.Add(ctx, sku, stock.MaxQuantity+1), stock.ErrInvalidQuantity},
		{"add past -max", inv.Add(ctx, sku, -stock.MaxQuantity-1), stock.ErrInvalidQuantity},
		{"levels, empty sku", func() error { _, err := inv.Levels(ctx, ""); return err }(), stock.ErrInvalidSKU},
	}
	for _, tt := range tests {
		if !errors.Is(tt.err, tt.want) {
			t.Errorf("%s: %v, want %v", tt.name, tt.err, tt.want)
		}
	}
	if n := sent.n.Load(); n != 0 {
		t.Errorf("bad input sent %d commands to Redis", n)
	}
}

func TestBadNew(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		opts []stock.Option
		want error
	}{
		{"nil option", []stock.Option{nil}, stock.ErrInvalidOption},
		{"prefix with a brace", []stock.Option{stock.WithPrefix("shop{1}")}, stock.ErrInvalidOption},
		{"prefix with a closing brace", []stock.Option{stock.WithPrefix("shop}")}, stock.ErrInvalidOption},
		{"retention zero", []stock.Option{stock.WithRetention(0)}, stock.ErrInvalidOption},
		{"retention past max", []stock.Option{stock.WithRetention(stock.MaxDuration + 1)}, stock.ErrInvalidOption},
		{"bad, then valid", []stock.Option{stock.WithRetention(0), stock.WithRetention(time.Hour)}, stock.ErrInvalidOption},
	}
	for _, tt := range tests {
		if inv, err := stock.New(testenv.Client(t), tt.opts...); !errors.Is(err, tt.want) || inv != nil {
			t.Errorf("%s: New = %v, %v; want nil, %v", tt.name, inv, err, tt.want)
		}
	}
	if inv, err := stock.New(nil); !errors.Is(err, stock.ErrNilClient) || inv != nil {
		t.Errorf("New(nil) = %v, %v; want nil, ErrNilClient", inv, err)
	}
	if inv, err := stock.New((*redis.Client)(nil)); !errors.Is(err, stock.ErrNilClient) || inv != nil {
		t.Errorf("New of a nil *redis.Client = %v, %v; want nil, ErrNilClient", inv, err)
	}
}

// A key of another type where the stock keeps its data: an error that
// names it, and nothing changes.
func TestWrongType(t *testing.T) {
	t.Parallel()
	rdb := testenv.Client(t)
	prefix := testenv.NewKey(t)
	inv := newInventory(t, rdb, stock.WithPrefix(prefix))
	ctx := context.Background()
	mustSet(t, inv, "shirt", 5)
	mustReserve(t, inv, "shirt", "o1", 1, time.Millisecond)
	holds := prefix + "{shirt}:holds"
	if n, err := rdb.ZCard(ctx, holds).Result(); err != nil || n != 1 {
		t.Fatalf("ZCARD %s = %d, %v; want the hold there", holds, n, err)
	}
	time.Sleep(2 * time.Millisecond) // the hold expires, but is not returned yet
	orders := prefix + "{shirt}:order"
	clobber(t, rdb, orders)
	err := inv.Reserve(ctx, "shirt", "o2", 1, time.Minute)
	if !errors.Is(err, stock.ErrWrongType) || !strings.Contains(err.Error(), orders) {
		t.Fatalf("Reserve = %v, want ErrWrongType naming %s", err, orders)
	}
	if _, err := inv.Available(ctx, "shirt"); !errors.Is(err, stock.ErrWrongType) {
		t.Fatalf("Available = %v, want ErrWrongType", err)
	}
	level := prefix + "{shirt}:level"
	if got, err := rdb.HGetAll(ctx, level).Result(); err != nil || got["available"] != "4" || got["held"] != "1" {
		t.Errorf("HGETALL %s = %v, %v; want it as it was: available 4, held 1", level, got, err)
	}
	if n, err := rdb.ZCard(ctx, holds).Result(); err != nil || n != 1 {
		t.Errorf("ZCARD %s = %d, %v; want it as it was", holds, n, err)
	}
}

// The holds of a sku replaced by a key of another type while no hold is
// due, so that no call reads them before it writes: a Reserve or a Commit
// still says so and changes nothing.
func TestWrongTypeHolds(t *testing.T) {
	t.Parallel()
	rdb := testenv.Client(t)
	prefix := testenv.NewKey(t)
	inv := newInventory(t, rdb, stock.WithPrefix(prefix))
	ctx := context.Background()
	holds := badHolds(t, rdb, inv, prefix)
	if err := inv.Reserve(ctx, "shirt", "o2", 1, time.Minute); !errors.Is(err, stock.ErrWrongType) || !strings.Contains(err.Error(), holds) {
		t.Errorf("Reserve = %v, want ErrWrongType naming %s", err, holds)
	}
	if err := inv.Commit(ctx, "shirt", "o1"); !errors.Is(err, stock.ErrWrongType) || !strings.Contains(err.Error(), holds) {
		t.Errorf("Commit = %v, want ErrWrongType naming %s", err, holds)
	}
	wantLevels(t, inv, "shirt", stock.Levels{Available: 4, Held: 1})
	if got, err := rdb.HGetAll(ctx, prefix+"{shirt}:order").Result(); err != nil || len(got) != 1 || got["o1"] != "held:1" {
		t.Errorf("the orders: %v, %v; want o1 held only", got, err)
	}
}

// A call returns when its context ends even if Redis does not answer, and
// Close waits for the call to finish.
func TestContextEndsFirst(t *testing.T) {
	t.Parallel()
	srv := redistest.NewServer(t)
	rdb := srv.Client(func(o *redis.Options) { o.ReadTimeout = -1 }) // go-redis would wait for ever
	inv, err := stock.New(rdb)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	mustSet(t, inv, "shirt", 5)

	srv.Pause()
	cctx, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancel()
	err = inv.Reserve(cctx, "shirt", "o1", 1, time.Minute)
	if !errors.Is(err, context.DeadlineExceeded) || !errors.Is(err, stock.ErrOutcomeUnknown) {
		t.Errorf("Reserve on a paused server = %v, want a deadline error and ErrOutcomeUnknown", err)
	}
	srv.Resume()
	if err := inv.Close(); err != nil {
		t.Fatal(err)
	}
	if err := inv.Reserve(ctx, "shirt", "o2", 1, time.Minute); !errors.Is(err, stock.ErrClosed) {
		t.Errorf("Reserve after Close = %v, want ErrClosed", err)
	}
	// The abandoned Reserve went through: a retry changes nothing.
	inv = newInventory(t, rdb)
	mustReserve(t, inv, "shirt", "o1", 1, time.Minute)
	wantLevels(t, inv, "shirt", stock.Levels{Available: 4, Held: 1})

	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	if err := inv.Reserve(cancelled, "shirt", "o3", 1, time.Minute); !errors.Is(err, context.Canceled) {
		t.Errorf("Reserve with a cancelled context = %v, want context.Canceled", err)
	}
}

// Redis down: an error, within go-redis's dial timeout.
func TestRedisDown(t *testing.T) {
	t.Parallel()
	// Port 1: a free port closed again could be taken at once by another
	// test's server (once, one with a "shirt" on it, and the Reserve
	// succeeded); nobody listens on port 1, and no test server gets it.
	rdb := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", MaxRetries: -1})
	t.Cleanup(func() { rdb.Close() })
	inv := newInventory(t, rdb)
	if err := inv.Reserve(context.Background(), "shirt", "o1", 1, time.Minute); err == nil || !strings.Contains(err.Error(), `reserve "shirt" for order "o1"`) {
		t.Errorf("Reserve with Redis down = %v, want an error naming the call", err)
	}
}

// A server that lost the scripts (SCRIPT FLUSH, a restart, a failover) gets
// them again.
func TestScriptsFlushed(t *testing.T) {
	t.Parallel()
	srv := redistest.NewServer(t)
	rdb := srv.Client()
	inv := newInventory(t, rdb)
	ctx := context.Background()
	mustSet(t, inv, "shirt", 5)
	if err := rdb.ScriptFlush(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	if err := inv.Reserve(ctx, "shirt", "o1", 1, time.Minute); err != nil {
		t.Fatalf("Reserve after SCRIPT FLUSH: %v", err)
	}
	wantLevels(t, inv, "shirt", stock.Levels{Available: 4, Held: 1})
}
