package stock_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/dlock-go/dlock/internal/testenv"
	"github.com/dlock-go/dlock/redistest"
	"github.com/dlock-go/dlock/stock"
)

// A hold neither committed nor cancelled returns its units by itself, with
// nothing but the calls on the sku: no sweeper.
func TestHoldExpires(t *testing.T) {
	t.Parallel()
	inv := newInventory(t, testenv.Client(t))
	ctx := context.Background()
	sku := testSKU(t, "shirt")
	mustSet(t, inv, sku, 10)
	for _, order := range []string{"abandoned", "cancelled-late", "committed-late"} {
		mustReserve(t, inv, sku, order, 2, 20*time.Millisecond)
	}
	mustReserve(t, inv, sku, "kept", 1, time.Minute)
	testenv.Eventually(t, 10*time.Second, "the expired holds are back", func() bool {
		return levels(t, inv, sku) == stock.Levels{Available: 9, Held: 1}
	})
	err := inv.Commit(ctx, sku, "committed-late")
	if !errors.Is(err, stock.ErrNoReservation) || !strings.Contains(err.Error(), "expired") {
		t.Errorf("Commit after the hold expired = %v, want ErrNoReservation saying it expired", err)
	}
	if err := inv.Cancel(ctx, sku, "cancelled-late"); !errors.Is(err, stock.ErrNoReservation) {
		t.Errorf("Cancel after the hold expired = %v, want ErrNoReservation", err)
	}
	// An expired order may reserve again, and the hold not expired is kept.
	mustReserve(t, inv, sku, "abandoned", 2, time.Minute)
	if err := inv.Commit(ctx, sku, "kept"); err != nil {
		t.Fatal(err)
	}
	wantLevels(t, inv, sku, stock.Levels{Available: 7, Held: 2, Sold: 1})
}

// The commit of a hold that has expired fails even when no call returned
// the hold to the stock yet: the script looks at the deadline, not at
// whether a sweep happened.
func TestCommitAtExpiry(t *testing.T) {
	t.Parallel()
	inv := newInventory(t, testenv.Client(t))
	ctx := context.Background()
	sku := testSKU(t, "shirt")
	mustSet(t, inv, sku, 1)
	mustReserve(t, inv, sku, "o1", 1, time.Millisecond)
	time.Sleep(5 * time.Millisecond) // past the hold, by the server's clock too
	if err := inv.Commit(ctx, sku, "o1"); !errors.Is(err, stock.ErrNoReservation) {
		t.Fatalf("Commit past the hold = %v, want ErrNoReservation", err)
	}
	wantLevels(t, inv, sku, stock.Levels{Available: 1})
}

// More expired holds than one script returns (100): the call returns them
// all over several round trips, and its answer counts them all.
func TestManyExpiredHolds(t *testing.T) {
	t.Parallel()
	rdb := testenv.Client(t)
	inv := newInventory(t, rdb)
	ctx := context.Background()
	sku := testSKU(t, "shirt")
	const holds = 250
	mustSet(t, inv, sku, holds+1)
	for i := range holds {
		mustReserve(t, inv, sku, fmt.Sprint("o", i), 1, time.Millisecond)
	}
	time.Sleep(5 * time.Millisecond) // every hold is past its deadline
	var sent counter
	counted := redis.NewClient(&redis.Options{Addr: redisAddr})
	t.Cleanup(func() { counted.Close() })
	counted.AddHook(&sent)
	if err := newInventory(t, counted).Reserve(ctx, sku, "big", holds+1, time.Minute); err != nil {
		t.Fatalf("Reserve of all the stock once the holds expired: %v", err)
	}
	if n := sent.n.Load(); n < 3 {
		t.Errorf("Reserve sent %d commands, want at least 3 for 250 expired holds", n)
	}
	wantLevels(t, inv, sku, stock.Levels{Available: 0, Held: holds + 1})
}

// Outcomes are remembered for the retention, then forgotten: the orders
// leave Redis.
func TestRetention(t *testing.T) {
	t.Parallel()
	rdb := testenv.Client(t)
	prefix := testenv.NewKey(t)
	inv := newInventory(t, rdb, stock.WithPrefix(prefix), stock.WithRetention(20*time.Millisecond))
	ctx := context.Background()
	mustSet(t, inv, "shirt", 5)
	for _, order := range []string{"o1", "o2", "o3"} {
		mustReserve(t, inv, "shirt", order, 1, time.Minute)
	}
	if err := inv.Commit(ctx, "shirt", "o1"); err != nil {
		t.Fatal(err)
	}
	if err := inv.Cancel(ctx, "shirt", "o2"); err != nil {
		t.Fatal(err)
	}
	orders := prefix + "{shirt}:order"
	testenv.Eventually(t, 10*time.Second, "o1 and o2 forgotten", func() bool {
		_ = levels(t, inv, "shirt") // any call forgets what is past its retention
		n, err := rdb.HLen(ctx, orders).Result()
		return err == nil && n == 1
	})
	err := inv.Commit(ctx, "shirt", "o1")
	if !errors.Is(err, stock.ErrNoReservation) || !strings.Contains(err.Error(), "forgotten") {
		t.Errorf("Commit of a forgotten order = %v, want ErrNoReservation", err)
	}
	wantLevels(t, inv, "shirt", stock.Levels{Available: 3, Held: 1, Sold: 1})
}

// Stock kept on a Redis without persistence is gone when it restarts: the
// calls say so rather than invent a quantity.
func TestRedisRestartedEmpty(t *testing.T) {
	t.Parallel()
	srv := redistest.NewServer(t)
	inv := newInventory(t, srv.Client())
	ctx := context.Background()
	mustSet(t, inv, "shirt", 5)
	mustReserve(t, inv, "shirt", "o1", 1, time.Minute)
	srv.Restart()
	if err := inv.Commit(ctx, "shirt", "o1"); !errors.Is(err, stock.ErrUnknownSKU) {
		t.Errorf("Commit after a restart = %v, want ErrUnknownSKU", err)
	}
	if _, err := inv.Available(ctx, "shirt"); !errors.Is(err, stock.ErrUnknownSKU) {
		t.Errorf("Available after a restart = %v, want ErrUnknownSKU", err)
	}
}

// A short hold after a long one expires in its time: the script that looks
// for due orders only when one may be due (the sku's level keeps the
// earliest deadline) learns of the earlier deadline.
func TestShortHoldAfterLongOne(t *testing.T) {
	t.Parallel()
	inv := newInventory(t, testenv.Client(t))
	ctx := context.Background()
	sku := testSKU(t, "shirt")
	mustSet(t, inv, sku, 10)
	mustReserve(t, inv, sku, "long", 1, time.Hour)
	mustReserve(t, inv, sku, "short", 2, 20*time.Millisecond)
	testenv.Eventually(t, 10*time.Second, "the short hold back", func() bool {
		return levels(t, inv, sku) == stock.Levels{Available: 9, Held: 1}
	})
	if err := inv.Commit(ctx, sku, "short"); !errors.Is(err, stock.ErrNoReservation) {
		t.Errorf("Commit of the expired hold = %v, want ErrNoReservation", err)
	}
}

// A sku written by a version that kept no earliest deadline in its level
// (or whose deadline was lost) has its due holds looked for, and returned.
func TestLevelWithoutDue(t *testing.T) {
	t.Parallel()
	rdb := testenv.Client(t)
	prefix := testenv.NewKey(t)
	inv := newInventory(t, rdb, stock.WithPrefix(prefix))
	ctx := context.Background()
	mustSet(t, inv, "shirt", 10)
	mustReserve(t, inv, "shirt", "long", 1, time.Hour)
	mustReserve(t, inv, "shirt", "short", 2, 20*time.Millisecond)
	level := prefix + "{shirt}:level"
	if err := rdb.HDel(ctx, level, "due").Err(); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, 10*time.Second, "the short hold back", func() bool {
		return levels(t, inv, "shirt") == stock.Levels{Available: 9, Held: 1}
	})
	// Now the level knows the earliest deadline again: the long hold's.
	due, err := rdb.HGet(ctx, level, "due").Int64()
	score, zerr := rdb.ZScore(ctx, prefix+"{shirt}:holds", "long").Result()
	if err != nil || zerr != nil || due != int64(score) {
		t.Errorf("due %d (%v), want the long hold's deadline %v (%v)", due, err, score, zerr)
	}
}
