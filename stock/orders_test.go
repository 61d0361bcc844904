package stock_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/dlock-go/dlock/internal/testenv"
	"github.com/dlock-go/dlock/stock"
)

func TestReserveCommitCancel(t *testing.T) {
	t.Parallel()
	inv := newInventory(t, testenv.Client(t))
	ctx := context.Background()
	sku := testSKU(t, "shirt")
	mustSet(t, inv, sku, 10)

	mustReserve(t, inv, sku, "o1", 3, time.Minute)
	mustReserve(t, inv, sku, "o2", 4, time.Minute)
	wantLevels(t, inv, sku, stock.Levels{Available: 3, Held: 7})
	if err := inv.Commit(ctx, sku, "o1"); err != nil {
		t.Fatal(err)
	}
	if err := inv.Cancel(ctx, sku, "o2"); err != nil {
		t.Fatal(err)
	}
	wantLevels(t, inv, sku, stock.Levels{Available: 7, Sold: 3})
	err := inv.Reserve(ctx, sku, "o3", 8, time.Minute)
	if !errors.Is(err, stock.ErrSoldOut) {
		t.Fatalf("Reserve 8 of 7 = %v, want ErrSoldOut", err)
	}
	if want := `stock: sold out: "` + sku + `" has 7 available, order "o3" wants 8`; err.Error() != want {
		t.Errorf("error %q, want %q", err, want)
	}
	wantLevels(t, inv, sku, stock.Levels{Available: 7, Sold: 3})
}

// Every call, made again, gets the answer it got the first time and
// changes nothing: what a client that lost a reply and retried sees.
func TestCallsAreIdempotent(t *testing.T) {
	t.Parallel()
	inv := newInventory(t, testenv.Client(t))
	ctx := context.Background()
	sku := testSKU(t, "shirt")
	mustSet(t, inv, sku, 10)

	for range 3 {
		mustReserve(t, inv, sku, "paid", 2, time.Minute)
		mustReserve(t, inv, sku, "dropped", 3, time.Minute)
	}
	wantLevels(t, inv, sku, stock.Levels{Available: 5, Held: 5})
	for range 3 {
		if err := inv.Commit(ctx, sku, "paid"); err != nil {
			t.Fatal(err)
		}
		if err := inv.Cancel(ctx, sku, "dropped"); err != nil {
			t.Fatal(err)
		}
	}
	wantLevels(t, inv, sku, stock.Levels{Available: 8, Sold: 2})
	// A late retry of the paid order's Reserve: it has its units.
	mustReserve(t, inv, sku, "paid", 2, time.Minute)
	wantLevels(t, inv, sku, stock.Levels{Available: 8, Sold: 2})
}

func TestOrderStates(t *testing.T) {
	t.Parallel()
	inv := newInventory(t, testenv.Client(t))
	ctx := context.Background()
	sku := testSKU(t, "shirt")
	mustSet(t, inv, sku, 10)
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(inv.Reserve(ctx, sku, "committed", 1, time.Minute))
	must(inv.Commit(ctx, sku, "committed"))
	must(inv.Reserve(ctx, sku, "cancelled", 1, time.Minute))
	must(inv.Cancel(ctx, sku, "cancelled"))
	must(inv.Reserve(ctx, sku, "held", 2, time.Minute))

	tests := []struct {
		name string
		call func() error
		want error  // nil for success
		says string // in the message
	}{
		{"commit never reserved", func() error { return inv.Commit(ctx, sku, "nobody") }, stock.ErrNoReservation, "was never reserved"},
		{"cancel never reserved", func() error { return inv.Cancel(ctx, sku, "nobody") }, stock.ErrNoReservation, "was never reserved"},
		{"commit cancelled", func() error { return inv.Commit(ctx, sku, "cancelled") }, stock.ErrNoReservation, "was cancelled"},
		{"cancel committed", func() error { return inv.Cancel(ctx, sku, "committed") }, stock.ErrNoReservation, "was committed"},
		{"reserve held, other quantity", func() error { return inv.Reserve(ctx, sku, "held", 3, time.Minute) }, stock.ErrConflict, `holds 2 of "` + sku + `", not 3`},
		{"reserve committed, other quantity", func() error { return inv.Reserve(ctx, sku, "committed", 2, time.Minute) }, stock.ErrConflict, "holds 1"},
		{"reserve held, same quantity", func() error { return inv.Reserve(ctx, sku, "held", 2, time.Minute) }, nil, ""},
		{"take away more than available", func() error { return inv.Add(ctx, sku, -8) }, stock.ErrSoldOut, "has 7 available, cannot take 8 away"},
		{"add past MaxQuantity", func() error { return inv.Add(ctx, sku, stock.MaxQuantity-8) }, stock.ErrInvalidQuantity, "more than MaxQuantity"},
		{"set past MaxQuantity with what is held", func() error { return inv.Set(ctx, sku, stock.MaxQuantity-1) }, stock.ErrInvalidQuantity, "more than MaxQuantity"},
	}
	for _, tt := range tests {
		err := tt.call()
		if !errors.Is(err, tt.want) || (tt.want == nil) != (err == nil) {
			t.Errorf("%s: %v, want %v", tt.name, err, tt.want)
		} else if err != nil && !strings.Contains(err.Error(), tt.says) {
			t.Errorf("%s: %q does not say %q", tt.name, err, tt.says)
		}
	}
	// Nothing above changed anything.
	wantLevels(t, inv, sku, stock.Levels{Available: 7, Held: 2, Sold: 1})

	// A cancelled order may reserve again.
	must(inv.Reserve(ctx, sku, "cancelled", 4, time.Minute))
	must(inv.Add(ctx, sku, -3))
	must(inv.Add(ctx, sku, 5))
	wantLevels(t, inv, sku, stock.Levels{Available: 5, Held: 6, Sold: 1})
	// Set sets what is available; holds keep theirs.
	mustSet(t, inv, sku, 100)
	must(inv.Cancel(ctx, sku, "held"))
	wantLevels(t, inv, sku, stock.Levels{Available: 102, Held: 4, Sold: 1})
}

func TestUnknownSKU(t *testing.T) {
	t.Parallel()
	inv := newInventory(t, testenv.Client(t))
	ctx := context.Background()
	sku := testSKU(t, "never-set")
	calls := map[string]func() error{
		"Reserve":   func() error { return inv.Reserve(ctx, sku, "o", 1, time.Minute) },
		"Commit":    func() error { return inv.Commit(ctx, sku, "o") },
		"Cancel":    func() error { return inv.Cancel(ctx, sku, "o") },
		"Add":       func() error { return inv.Add(ctx, sku, 1) },
		"Available": func() error { _, err := inv.Available(ctx, sku); return err },
	}
	for name, call := range calls {
		if err := call(); !errors.Is(err, stock.ErrUnknownSKU) {
			t.Errorf("%s on a sku never set: %v, want ErrUnknownSKU", name, err)
		}
	}
	rdb := testenv.Client(t)
	if n, err := rdb.Keys(ctx, "*"+sku+"*").Result(); err != nil || len(n) != 0 {
		t.Errorf("keys of the unknown sku: %q, %v; want none", n, err)
	}
}

func TestCart(t *testing.T) {
	t.Parallel()
	inv := newInventory(t, testenv.Client(t))
	ctx := context.Background()
	shirt, socks, hat := testSKU(t, "shirt"), testSKU(t, "socks"), testSKU(t, "hat")
	mustSet(t, inv, shirt, 5)
	mustSet(t, inv, socks, 5)
	mustSet(t, inv, hat, 1)

	cart := map[string]int64{shirt: 2, socks: 3, hat: 2}
	if err := inv.ReserveAll(ctx, "o1", cart, time.Minute); !errors.Is(err, stock.ErrSoldOut) || !strings.Contains(err.Error(), hat) {
		t.Fatalf("ReserveAll with the hat sold out = %v, want ErrSoldOut naming the hat", err)
	}
	wantLevels(t, inv, shirt, stock.Levels{Available: 5})
	cart[hat] = 1
	for range 2 { // the second one is a retry
		if err := inv.ReserveAll(ctx, "o1", cart, time.Minute); err != nil {
			t.Fatal(err)
		}
	}
	wantLevels(t, inv, socks, stock.Levels{Available: 2, Held: 3})
	if err := inv.CommitAll(ctx, "o1", []string{shirt, socks, testSKU(t, "unknown")}); !errors.Is(err, stock.ErrUnknownSKU) {
		t.Fatalf("CommitAll with an unknown sku = %v, want ErrUnknownSKU", err)
	}
	if err := inv.Cancel(ctx, hat, "o1"); err != nil {
		t.Fatal(err)
	}
	if err := inv.CommitAll(ctx, "o1", []string{shirt, socks, hat}); !errors.Is(err, stock.ErrNoReservation) {
		t.Fatalf("CommitAll with the hat cancelled = %v, want ErrNoReservation", err)
	}
	wantLevels(t, inv, shirt, stock.Levels{Available: 3, Held: 2})
	if err := inv.CommitAll(ctx, "o1", []string{shirt, socks}); err != nil {
		t.Fatal(err)
	}
	wantLevels(t, inv, shirt, stock.Levels{Available: 3, Sold: 2})
	wantLevels(t, inv, socks, stock.Levels{Available: 2, Sold: 3})
	wantLevels(t, inv, hat, stock.Levels{Available: 1})

	// A cart that adds to what the order holds already.
	if err := inv.ReserveAll(ctx, "o2", map[string]int64{shirt: 1}, time.Minute); err != nil {
		t.Fatal(err)
	}
	if err := inv.ReserveAll(ctx, "o2", map[string]int64{shirt: 1, hat: 1}, time.Minute); err != nil {
		t.Fatal(err)
	}
	if err := inv.CancelAll(ctx, "o2", []string{shirt, hat}); err != nil {
		t.Fatal(err)
	}
	wantLevels(t, inv, shirt, stock.Levels{Available: 3, Sold: 2})
	wantLevels(t, inv, hat, stock.Levels{Available: 1})
}

func TestDelete(t *testing.T) {
	t.Parallel()
	inv := newInventory(t, testenv.Client(t))
	ctx := context.Background()
	sku := testSKU(t, "shirt")
	mustSet(t, inv, sku, 5)
	mustReserve(t, inv, sku, "o1", 2, time.Minute)
	if err := inv.Delete(ctx, sku); err != nil {
		t.Fatal(err)
	}
	if err := inv.Commit(ctx, sku, "o1"); !errors.Is(err, stock.ErrUnknownSKU) {
		t.Errorf("Commit after Delete = %v, want ErrUnknownSKU", err)
	}
	mustSet(t, inv, sku, 3)
	if err := inv.Commit(ctx, sku, "o1"); !errors.Is(err, stock.ErrNoReservation) {
		t.Errorf("Commit of a hold from before Delete = %v, want ErrNoReservation", err)
	}
	wantLevels(t, inv, sku, stock.Levels{Available: 3})
	if err := inv.Delete(ctx, ""); !errors.Is(err, stock.ErrInvalidSKU) {
		t.Errorf("Delete of an empty sku = %v, want ErrInvalidSKU", err)
	}
}

// With no hold due (the script does not look for expired holds): a retry
// finds the order's hold even with the stock sold out, another quantity is
// a conflict, a cancelled order reserves again, a committed one is so
// already.
func TestReserveWithNothingDue(t *testing.T) {
	t.Parallel()
	inv := newInventory(t, testenv.Client(t))
	ctx := context.Background()
	sku := testSKU(t, "shirt")
	mustSet(t, inv, sku, 3)
	mustReserve(t, inv, sku, "o1", 3, time.Hour)
	if err := inv.Reserve(ctx, sku, "o1", 3, time.Hour); err != nil {
		t.Errorf("the retried Reserve, sold out = %v, want nil", err)
	}
	if err := inv.Reserve(ctx, sku, "o1", 2, time.Hour); !errors.Is(err, stock.ErrConflict) {
		t.Errorf("Reserve of another quantity = %v, want ErrConflict", err)
	}
	if err := inv.Reserve(ctx, sku, "o2", 1, time.Hour); !errors.Is(err, stock.ErrSoldOut) {
		t.Errorf("Reserve of a new order, sold out = %v, want ErrSoldOut", err)
	}
	if err := inv.Cancel(ctx, sku, "o1"); err != nil {
		t.Fatal(err)
	}
	if err := inv.Reserve(ctx, sku, "o1", 2, time.Hour); err != nil {
		t.Errorf("Reserve of a cancelled order = %v, want nil", err)
	}
	mustReserve(t, inv, sku, "o2", 1, time.Hour)
	wantLevels(t, inv, sku, stock.Levels{Available: 0, Held: 3})
	if err := inv.Commit(ctx, sku, "o1"); err != nil {
		t.Fatal(err)
	}
	if err := inv.Reserve(ctx, sku, "o1", 2, time.Hour); err != nil {
		t.Errorf("Reserve of a committed order = %v, want nil (already so)", err)
	}
	wantLevels(t, inv, sku, stock.Levels{Available: 0, Held: 1, Sold: 2})
}

// Two inventories on one Redis keep apart whatever their prefixes and skus:
// prefix "p" with sku "{x}" and prefix "p:" with sku "x" once shared keys,
// and the second's Set overwrote the first's stock.
func TestPrefixesKeepApart(t *testing.T) {
	t.Parallel()
	rdb := testenv.Client(t)
	ctx := context.Background()
	p := testenv.NewKey(t)
	pairs := [][2]struct{ prefix, sku string }{
		{{p, "{x}"}, {p + ":", "x"}},
		{{p, "{x}y"}, {p + ":", "x}y"}},
		{{p, "a}b"}, {p + "#", "{40634}a}b"}},
	}
	for _, pair := range pairs {
		first := newInventory(t, rdb, stock.WithPrefix(pair[0].prefix))
		second := newInventory(t, rdb, stock.WithPrefix(pair[1].prefix))
		mustSet(t, first, pair[0].sku, 100)
		mustReserve(t, first, pair[0].sku, "o1", 10, time.Hour)
		mustSet(t, second, pair[1].sku, 1)
		if err := second.Commit(ctx, pair[1].sku, "o1"); !errors.Is(err, stock.ErrNoReservation) {
			t.Errorf("Commit of the other inventory's order = %v, want ErrNoReservation", err)
		}
		wantLevels(t, first, pair[0].sku, stock.Levels{Available: 90, Held: 10})
		wantLevels(t, second, pair[1].sku, stock.Levels{Available: 1})
	}
}
