package stock_test

import (
	"context"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/dlock-go/dlock/observe"
	"github.com/dlock-go/dlock/stock"
)

// soldOut prints the sold-outs an Inventory tells; a program gives it the
// Observer of its dlock Clients instead, such as the Prometheus module's
// Collector.
type soldOut struct{}

func (soldOut) Observe(observe.Event) {}

func (soldOut) ObservePackage(e observe.PackageEvent) {
	if e.Outcome == observe.OutcomeSoldOut {
		fmt.Println("sold out:", e.Key)
	}
}

// An Inventory given an observer tells it how its calls ended.
func ExampleWithObserver() {
	rdb := redis.NewClient(&redis.Options{Addr: redisAddr})
	defer rdb.Close()
	inv, err := stock.New(rdb, stock.WithPrefix("example-observer"), stock.WithObserver(soldOut{}))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer inv.Close()
	ctx := context.Background()
	if err := inv.Set(ctx, "lamp", 1); err != nil {
		fmt.Println(err)
		return
	}
	defer inv.Delete(ctx, "lamp")
	_ = inv.Reserve(ctx, "lamp", "order-1", 1, time.Minute)
	_ = inv.Reserve(ctx, "lamp", "order-2", 1, time.Minute)
	// Output: sold out: lamp
}
