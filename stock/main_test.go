package stock_test

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"go.uber.org/goleak"

	"github.com/dlock-go/dlock/internal/testwait"
	"github.com/dlock-go/dlock/redistest"
	"github.com/dlock-go/dlock/stock"
)

// redisAddr is the address of a redis-server shared by the tests that need
// no server of their own, and by the examples.
var redisAddr string

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(redistest.Shared(m, &redisAddr))
}

// shared returns a client of the shared server, closed when the test ends.
func shared(t testing.TB) *redis.Client {
	t.Helper()
	rdb := redis.NewClient(&redis.Options{Addr: redisAddr})
	t.Cleanup(func() { rdb.Close() })
	return rdb
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

// runs tells apart the runs of a test in one process (go test -count).
var runs atomic.Int64

// testSKU returns a sku unique to the test and its run.
func testSKU(t testing.TB, name string) string {
	return testPrefix(t) + ":" + name
}

// testPrefix returns a key prefix unique to the test and its run.
func testPrefix(t testing.TB) string {
	return fmt.Sprintf("%s:%d", strings.ReplaceAll(t.Name(), "/", ":"), runs.Add(1))
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

// eventually calls check until it returns true, or fails the test after
// limit. The limit is no timing assertion: it only ends a test that would
// otherwise hang.
func eventually(t testing.TB, d time.Duration, what string, cond func() bool) {
	t.Helper()
	testwait.Until(t, d, what, cond)
}

// newServer starts a redis-server of the test's own, for tests that stop,
// pause or restart it.
func newServer(t testing.TB) *redistest.Server {
	t.Helper()
	return redistest.NewServer(t)
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
