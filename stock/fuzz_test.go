package stock_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/dlock-go/dlock/redistest"
	"github.com/dlock-go/dlock/stock"
)

// FuzzReserve sets a sku, reserves some of it and commits, with any sku,
// order, quantities and hold: each call either does what it says or
// returns the error its input deserves, and the levels always add up.
func FuzzReserve(f *testing.F) {
	srv := redistest.NewServer(f)
	rdb := srv.Client()
	inv := newInventory(f, rdb)
	ctx := context.Background()
	f.Add("shirt", "o1", int64(10), int64(3), int64(60000))
	f.Add("{shop}shirt", "o1", int64(3), int64(3), int64(1))
	f.Add("a}b", "{o}", int64(2), int64(3), int64(1000))
	f.Add("", "o1", int64(1), int64(1), int64(1000))
	f.Add("shirt", "", int64(1), int64(1), int64(1000))
	f.Add("\x00\xff", "\n", int64(stock.MaxQuantity), int64(stock.MaxQuantity), int64(1))
	f.Add(strings.Repeat("x", 10000), "o", int64(-1), int64(0), int64(0))
	f.Add("shirt", "o1", int64(stock.MaxQuantity+1), int64(-5), int64(-1))
	f.Fuzz(func(t *testing.T, sku, order string, set, qty, holdMs int64) {
		if err := rdb.FlushDB(ctx).Err(); err != nil {
			t.Fatal(err)
		}
		hold := time.Duration(holdMs) * time.Millisecond
		err := inv.Set(ctx, sku, set)
		wantSet := firstOf(
			sku == "", stock.ErrInvalidSKU,
			set < 0 || set > stock.MaxQuantity, stock.ErrInvalidQuantity)
		if !is(err, wantSet) {
			t.Fatalf("Set(%q, %d) = %v, want %v", sku, set, err, wantSet)
		}
		err = inv.Reserve(ctx, sku, order, qty, hold)
		wantReserve := firstOf(
			order == "", stock.ErrInvalidOrder,
			hold < time.Millisecond || hold > stock.MaxDuration, stock.ErrInvalidHold,
			sku == "", stock.ErrInvalidSKU,
			qty < 1 || qty > stock.MaxQuantity, stock.ErrInvalidQuantity,
			wantSet != nil, stock.ErrUnknownSKU,
			qty > set, stock.ErrSoldOut)
		if !is(err, wantReserve) {
			t.Fatalf("Reserve(%q, %q, %d, %v) after Set %d = %v, want %v", sku, order, qty, hold, set, err, wantReserve)
		}
		if wantSet != nil {
			return
		}
		l, err := inv.Levels(ctx, sku)
		if err != nil {
			t.Fatal(err)
		}
		if wantReserve != nil || hold < time.Second { // a short hold may have expired
			if l.Available+l.Held != set || l.Sold != 0 {
				t.Fatalf("levels %+v after Set %d", l, set)
			}
			return
		}
		if want := (stock.Levels{Available: set - qty, Held: qty}); l != want {
			t.Fatalf("levels %+v, want %+v", l, want)
		}
		for range 2 {
			if err := inv.Commit(ctx, sku, order); err != nil {
				t.Fatal(err)
			}
		}
		if l, _ := inv.Levels(ctx, sku); l != (stock.Levels{Available: set - qty, Sold: qty}) {
			t.Fatalf("levels %+v after Commit of %d of %d", l, qty, set)
		}
	})
}

// firstOf returns the error after the first true condition, or nil.
func firstOf(pairs ...any) error {
	for i := 0; i < len(pairs); i += 2 {
		if pairs[i].(bool) {
			return pairs[i+1].(error)
		}
	}
	return nil
}

// is reports whether err matches want, or both are nil.
func is(err, want error) bool {
	if want == nil {
		return err == nil
	}
	return errors.Is(err, want)
}
