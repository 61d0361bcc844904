package stock_test

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/dlock-go/dlock/internal/testenv"
	"github.com/dlock-go/dlock/stock"
)

// redisAddr is the address of a redis-server shared by the tests that need
// no server of their own, and by the examples.
var redisAddr string

func TestMain(m *testing.M) {
	testenv.Main(m, testenv.SharedServer(&redisAddr))
}

// newInventory returns an Inventory on rdb, closed when the test ends.
func newInventory(t testing.TB, rdb redis.UniversalClient, opts ...stock.Option) *stock.Inventory {
	t.Helper()
	inv, err := stock.New(rdb, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { inv.Close() })
	return inv
}

// testSKU returns a sku unique to the test and its run, new at each call.
func testSKU(t testing.TB, name string) string {
	return testenv.NewKey(t) + ":" + name
}

// mustSet sets sku to qty or fails the test.
func mustSet(t testing.TB, inv *stock.Inventory, sku string, qty int64) {
	t.Helper()
	if err := inv.Set(context.Background(), sku, qty); err != nil {
		t.Fatalf("Set(%q, %d): %v", sku, qty, err)
	}
}

// levels returns the levels of sku or fails the test.
func levels(t testing.TB, inv *stock.Inventory, sku string) stock.Levels {
	t.Helper()
	l, err := inv.Levels(context.Background(), sku)
	if err != nil {
		t.Fatalf("Levels(%q): %v", sku, err)
	}
	return l
}

// wantLevels fails the test unless sku has the levels want.
func wantLevels(t testing.TB, inv *stock.Inventory, sku string, want stock.Levels) {
	t.Helper()
	if got := levels(t, inv, sku); got != want {
		t.Errorf("Levels(%q) = %+v, want %+v", sku, got, want)
	}
}

// mustReserve reserves qty of sku for order, for hold, or fails the test.
func mustReserve(t testing.TB, inv *stock.Inventory, sku, order string, qty int64, hold time.Duration) {
	t.Helper()
	if err := inv.Reserve(context.Background(), sku, order, qty, hold); err != nil {
		t.Fatal(err)
	}
}

// clobber replaces key with a string: a key of another type than the
// stock keeps there.
func clobber(t testing.TB, rdb *redis.Client, key string) {
	t.Helper()
	ctx := context.Background()
	if err := rdb.Del(ctx, key).Err(); err != nil {
		t.Fatal(err)
	}
	if err := rdb.Set(ctx, key, "not what the stock keeps here", 0).Err(); err != nil {
		t.Fatal(err)
	}
}

// badHolds sets up sku "shirt" of inv (whose prefix is prefix) with 5
// units, 1 held by order "o1" for an hour, then replaces its holds with a
// key of another type while no hold is due, so that no call reads them
// before it writes. It returns the name of that key.
func badHolds(t testing.TB, rdb *redis.Client, inv *stock.Inventory, prefix string) string {
	t.Helper()
	mustSet(t, inv, "shirt", 5)
	mustReserve(t, inv, "shirt", "o1", 1, time.Hour)
	holds := prefix + "{shirt}:holds"
	clobber(t, rdb, holds)
	return holds
}
