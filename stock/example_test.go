package stock_test

import (
	"context"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/dlock-go/dlock/stock"
)

// A flash sale: three units, five buyers, one of whom cannot pay. A
// buyer reserves a unit, pays, and commits the sale, or cancels it so that
// the unit goes back on sale; if the process dies before either, the hold
// expires and the unit goes back by itself.
func Example() {
	rdb := redis.NewClient(&redis.Options{Addr: redisAddr})
	defer rdb.Close()
	inv, err := stock.New(rdb) // one per process: safe for concurrent use
	if err != nil {
		fmt.Println(err)
		return
	}
	defer inv.Close()
	ctx := context.Background()

	if err := inv.Set(ctx, "example:console", 3); err != nil {
		fmt.Println(err)
		return
	}
	defer inv.Delete(ctx, "example:console") // the sale is over
	for _, order := range []string{"order-1", "order-2", "order-3", "order-4", "order-5"} {
		err := inv.Reserve(ctx, "example:console", order, 1, 10*time.Minute)
		if err != nil {
			fmt.Printf("%s: %v\n", order, err) // stock.ErrSoldOut
			continue
		}
		if order == "order-2" { // the payment failed: the unit goes back on sale
			err = inv.Cancel(ctx, "example:console", order)
			fmt.Printf("%s: payment failed, cancelled: %v\n", order, err)
			continue
		}
		err = inv.Commit(ctx, "example:console", order) // paid
		fmt.Printf("%s: sold: %v\n", order, err)
	}
	levels, _ := inv.Levels(ctx, "example:console")
	fmt.Printf("%+v\n", levels)
	// Output:
	// order-1: sold: <nil>
	// order-2: payment failed, cancelled: <nil>
	// order-3: sold: <nil>
	// order-4: sold: <nil>
	// order-5: stock: sold out: "example:console" has 0 available, order "order-5" wants 1
	// {Available:0 Held:0 Sold:3}
}

// A retried Reserve, as after a reply lost to a network error, holds the
// units once: the order names the reservation.
func ExampleInventory_Reserve_retry() {
	rdb := redis.NewClient(&redis.Options{Addr: redisAddr})
	defer rdb.Close()
	inv, err := stock.New(rdb)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer inv.Close()
	ctx := context.Background()

	_ = inv.Set(ctx, "example:ticket", 10)
	defer inv.Delete(ctx, "example:ticket")
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
	inv, err := stock.New(rdb)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer inv.Close()
	ctx := context.Background()

	_ = inv.Set(ctx, "example:lamp", 1)
	defer inv.Delete(ctx, "example:lamp")
	_ = inv.Reserve(ctx, "example:lamp", "order-abandoned", 1, 20*time.Millisecond)
	n, _ := inv.Available(ctx, "example:lamp")
	fmt.Println("available while held:", n)

	time.Sleep(30 * time.Millisecond)
	n, _ = inv.Available(ctx, "example:lamp")
	fmt.Println("available once the hold expired:", n)
	err = inv.Commit(ctx, "example:lamp", "order-abandoned")
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
	inv, err := stock.New(rdb)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer inv.Close()
	ctx := context.Background()

	_ = inv.Set(ctx, "{shop-7}shirt", 5)
	_ = inv.Set(ctx, "{shop-7}socks", 1)
	defer inv.Delete(ctx, "{shop-7}shirt")
	defer inv.Delete(ctx, "{shop-7}socks")
	cart := map[string]int64{"{shop-7}shirt": 2, "{shop-7}socks": 2}
	err = inv.ReserveAll(ctx, "order-8", cart, 10*time.Minute)
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
