package stock_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/dlock-go/dlock/stock"
)

// checkout sells one unit of sku to order: reserve it, take the payment,
// then commit the sale, or cancel it so that the unit goes back to the
// stock. If the process dies before either, the hold expires and the unit
// goes back by itself.
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

// A flash sale: three units, four buyers, one of whom cannot pay.
func Example() {
	rdb := redis.NewClient(&redis.Options{Addr: redisAddr})
	defer rdb.Close()
	inv := stock.New(rdb) // one per process: safe for concurrent use
	defer inv.Close()
	ctx := context.Background()

	if err := inv.Set(ctx, "example:console", 3); err != nil {
		fmt.Println(err)
		return
	}
	paid := func() error { return nil }
	declined := func() error { return errors.New("card declined") }
	for _, buyer := range []struct {
		order string
		pay   func() error
	}{{"order-1", paid}, {"order-2", declined}, {"order-3", paid}, {"order-4", paid}, {"order-5", paid}} {
		err := checkout(ctx, inv, "example:console", buyer.order, buyer.pay)
		fmt.Printf("%s: %v\n", buyer.order, err)
	}
	levels, _ := inv.Levels(ctx, "example:console")
	fmt.Printf("%+v\n", levels)
	// Output:
	// order-1: <nil>
	// order-2: card declined
	// order-3: <nil>
	// order-4: <nil>
	// order-5: stock: sold out: "example:console" has 0 available, order "order-5" wants 1
	// {Available:0 Held:0 Sold:3}
}

// A retried Reserve, as after a reply lost to a network error, holds the
// units once: the order names the reservation.
func ExampleInventory_Reserve_retry() {
	rdb := redis.NewClient(&redis.Options{Addr: redisAddr})
	defer rdb.Close()
	inv := stock.New(rdb)
	defer inv.Close()
	ctx := context.Background()

	_ = inv.Set(ctx, "example:ticket", 10)
	for range 3 { // the same request, three times
		if err := inv.Reserve(ctx, "example:ticket", "order-77", 2, time.Minute); err != nil {
			fmt.Println(err)
		}
	}
	levels, _ := inv.Levels(ctx, "example:ticket")
	fmt.Printf("%+v\n", levels)
	// Output: {Available:8 Held:2 Sold:0}
}

// A hold nobody commits or cancels returns its units when it expires.
func ExampleInventory_Reserve_expiry() {
	rdb := redis.NewClient(&redis.Options{Addr: redisAddr})
	defer rdb.Close()
	inv := stock.New(rdb)
	defer inv.Close()
	ctx := context.Background()

	_ = inv.Set(ctx, "example:lamp", 1)
	_ = inv.Reserve(ctx, "example:lamp", "order-abandoned", 1, 20*time.Millisecond)
	n, _ := inv.Available(ctx, "example:lamp")
	fmt.Println("available while held:", n)

	time.Sleep(30 * time.Millisecond)
	n, _ = inv.Available(ctx, "example:lamp")
	fmt.Println("available once the hold expired:", n)
	err := inv.Commit(ctx, "example:lamp", "order-abandoned")
	fmt.Println(err)
	// Output:
	// available while held: 0
	// available once the hold expired: 1
	// stock: no reservation: order "order-abandoned" on "example:lamp" expired: its units are back in stock
}

// A cart is reserved all or nothing. Skus that share a hash tag, here
// "{shop-7}", share a Redis Cluster slot, which a cart needs there.
func ExampleInventory_ReserveAll() {
	rdb := redis.NewClient(&redis.Options{Addr: redisAddr})
	defer rdb.Close()
	inv := stock.New(rdb)
	defer inv.Close()
	ctx := context.Background()

	_ = inv.Set(ctx, "{shop-7}shirt", 5)
	_ = inv.Set(ctx, "{shop-7}socks", 1)
	cart := map[string]int64{"{shop-7}shirt": 2, "{shop-7}socks": 2}
	err := inv.ReserveAll(ctx, "order-8", cart, 10*time.Minute)
	fmt.Println(err)

	cart["{shop-7}socks"] = 1
	err = inv.ReserveAll(ctx, "order-8", cart, 10*time.Minute)
	fmt.Println(err)
	err = inv.CommitAll(ctx, "order-8", []string{"{shop-7}shirt", "{shop-7}socks"})
	fmt.Println(err)
	shirts, _ := inv.Levels(ctx, "{shop-7}shirt")
	fmt.Printf("shirts: %+v\n", shirts)
	// Output:
	// stock: sold out: "{shop-7}socks" has 1 available, order "order-8" wants 2
	// <nil>
	// <nil>
	// shirts: {Available:3 Held:0 Sold:2}
}
