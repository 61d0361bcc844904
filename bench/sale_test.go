package bench_test

import (
	"context"
	"testing"

	"github.com/dlock-go/dlock/bench"
	"github.com/dlock-go/dlock/redistest"
)

// Every approach of the sale runs, and all but the naive one sell exactly
// the stock, none twice.
func TestSaleRows(t *testing.T) {
	t.Parallel()
	srv := redistest.NewServer(t)
	cfg := bench.SaleConfig{Items: 50, Buyers: 80, Goroutines: 8, Clients: 2, Rounds: 2, MaxRetries: 1000}
	for _, row := range bench.SaleRows() {
		r, err := bench.RunSale(context.Background(), srv.Addr(), row, cfg)
		if err != nil {
			t.Fatalf("%s: %v", row.Name, err)
		}
		if r.ClientCPUUs <= 0 || r.ServerCPUUs < 0 {
			t.Errorf("%s: CPU per buyer %.1f µs here, %.1f µs in Redis; want it measured", row.Name, r.ClientCPUUs, r.ServerCPUUs)
		}
		if row.Name == "naive" {
			continue // it may oversell, or not: it races
		}
		if r.Sold != cfg.Items*cfg.Rounds || r.Oversold != 0 || r.Left != 0 || r.GaveUp != 0 {
			t.Errorf("%s: %+v, want %d sold in all, none oversold or left", row.Name, r, cfg.Items*cfg.Rounds)
		}
	}
}
