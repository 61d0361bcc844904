package stock_test

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/dlock-go/dlock/internal/testenv"
	"github.com/dlock-go/dlock/stock"
)

// BenchmarkReserveCancelUnobserved reserves a unit and cancels it, on an
// Inventory without an observer: what the metrics cost a program that
// does not use them (allocs/op, compared before and after they were
// added).
func BenchmarkReserveCancelUnobserved(b *testing.B) {
	inv, err := stock.New(testenv.Client(b), stock.WithPrefix(testenv.Key(b)))
	if err != nil {
		b.Fatal(err)
	}
	defer inv.Close()
	ctx := context.Background()
	if err := inv.Set(ctx, "sku", 10); err != nil {
		b.Fatal(err)
	}
	i := 0
	b.ReportAllocs()
	for b.Loop() {
		i++
		order := strconv.Itoa(i)
		if err := inv.Reserve(ctx, "sku", order, 1, time.Minute); err != nil {
			b.Fatal(err)
		}
		if err := inv.Cancel(ctx, "sku", order); err != nil {
			b.Fatal(err)
		}
	}
}
