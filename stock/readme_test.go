package stock_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/dlock-go/dlock/internal/testenv"
	"github.com/dlock-go/dlock/stock"
)

// checkout sells one unit of sku to order: reserve it, take the payment,
// then commit the sale, or cancel it so that the unit goes back on sale.
// (docs/packages.md shows this function; the package's own examples are in
// example_test.go.)
func checkout(ctx context.Context, inv *stock.Inventory, sku, order string, pay func() error) error {
	err := inv.Reserve(ctx, sku, order, 1, 10*time.Minute)
	if err != nil {
		return err // stock.ErrSoldOut, or Redis failed: retrying with the same order is safe
	}
	if err := pay(); err != nil {
		_ = inv.Cancel(context.WithoutCancel(ctx), sku, order) // or let the hold expire
		return err
	}
	return inv.Commit(ctx, sku, order)
}

func TestReadmeCheckout(t *testing.T) {
	t.Parallel()
	rdb := testenv.Client(t)
	if err := readmeSale(t, rdb); err != nil {
		t.Fatal(err)
	}
}

// readmeSale sells the one unit of a sku through checkout.
func readmeSale(t *testing.T, rdb *redis.Client) error {
	inv, err := stock.New(rdb) // one per process: safe for concurrent use
	if err != nil {
		return err // a nil client, or an invalid option
	}
	defer inv.Close()
	ctx := context.Background()
	sku := testenv.Key(t)
	if err := inv.Set(ctx, sku, 1); err != nil {
		t.Fatal(err)
	}
	defer inv.Delete(ctx, sku)
	declined := errors.New("card declined")
	if err := checkout(ctx, inv, sku, "order-1", func() error { return declined }); !errors.Is(err, declined) {
		t.Fatalf("checkout with the card declined = %v", err)
	}
	if err := checkout(ctx, inv, sku, "order-2", func() error { return nil }); err != nil {
		t.Fatalf("checkout once the unit was back = %v", err)
	}
	if err := checkout(ctx, inv, sku, "order-3", func() error { return nil }); !errors.Is(err, stock.ErrSoldOut) {
		t.Fatalf("checkout of a sold unit = %v, want ErrSoldOut", err)
	}
	if l, err := inv.Levels(ctx, sku); err != nil || l != (stock.Levels{Sold: 1}) {
		t.Errorf("levels %+v, %v; want the one unit sold", l, err)
	}
	return nil
}

// docCode is the code of the package's doc (doc.go), as written, so that
// it compiles; TestDocCodeIsTested checks that the two agree.
func docCode(ctx context.Context, rdb *redis.Client, orderID string) error {
	inv, err := stock.New(rdb) // any go-redis client; one per process
	if err != nil {
		return err // a nil rdb or an invalid option
	}
	if err := inv.Set(ctx, "console", 1000); err != nil {
		return err
	}

	err = inv.Reserve(ctx, "console", orderID, 1, 10*time.Minute)
	if errors.Is(err, stock.ErrSoldOut) {
		return err // nothing left to reserve: tell the buyer
	}
	// take the payment, then
	err = inv.Commit(ctx, "console", orderID) // or inv.Cancel
	return err
}

func TestDocCodeIsTested(t *testing.T) {
	_ = docCode
	testenv.DocCodeIsTested(t, 1)
}
