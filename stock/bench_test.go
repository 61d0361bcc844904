package stock_test

import (
	"context"
	"strconv"
	"testing"
	"time"
)

// BenchmarkReserve times one Reserve of a unit on the shared server, by
// GOMAXPROCS goroutines, each order new.
func BenchmarkReserve(b *testing.B) {
	inv := newInventory(b, shared(b))
	ctx := context.Background()
	sku := testSKU(b, "item")
	mustSet(b, inv, sku, 1<<40)
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		order := strconv.FormatInt(time.Now().UnixNano(), 36) + ":"
		i := 0
		for pb.Next() {
			i++
			if err := inv.Reserve(ctx, sku, order+strconv.Itoa(i), 1, time.Minute); err != nil {
				b.Error(err)
				return
			}
		}
	})
}
