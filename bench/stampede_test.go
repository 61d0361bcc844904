package bench_test

import (
	"context"
	"testing"
	"time"

	"github.com/dlock-go/dlock/bench"
	"github.com/dlock-go/dlock/redistest"
)

// Every approach of the stampede runs without an error; singleflight loads
// once per process, the others once in all.
func TestStampedeRows(t *testing.T) {
	t.Parallel()
	srv := redistest.NewServer(t)
	cfg := bench.StampedeConfig{Goroutines: 60, Processes: 3, Rounds: 2, Load: 20 * time.Millisecond}
	for _, row := range bench.StampedeRows() {
		r, err := bench.RunStampede(context.Background(), srv.Addr(), row, cfg)
		if err != nil || r.Errors != 0 {
			t.Fatalf("%s: %+v, %v", row.Name, r, err)
		}
		want := 1.0
		if row.Name == "singleflight" {
			want = float64(cfg.Processes)
		}
		// Each Get's time from its call is within its time from the start.
		if r.CallP50Ms <= 0 || r.CallP50Ms > r.P50Ms || r.CallP99Ms > r.P99Ms || r.CallRoundP99Ms > r.RoundP99Ms {
			t.Errorf("%s: %+v, want each Get's latency from its call above 0 and within that from the start", row.Name, r)
		}
		// The first load starts within the stampede, and the p99 Get returns
		// after the last load ended.
		if r.LoadStartMs < 0 || r.LoadStartMs >= r.P50Ms || r.AfterLoadP99Ms <= 0 {
			t.Errorf("%s: %+v, want the load to start after the start and the p99 Get to return after the load", row.Name, r)
		}
		if r.Loads != want || r.Gets != cfg.Goroutines*cfg.Rounds {
			t.Errorf("%s: %+v, want %v loads per stampede", row.Name, r, want)
		}
	}
}

// With a context of its own for each Get, cachefill still loads once and
// every Get gets the value.
func TestStampedeOwnContexts(t *testing.T) {
	t.Parallel()
	srv := redistest.NewServer(t)
	cfg := bench.StampedeConfig{Goroutines: 60, Processes: 3, Rounds: 2, Load: 20 * time.Millisecond, OwnContexts: true}
	for _, row := range bench.StampedeRows() {
		if row.Name != "cachefill" {
			continue
		}
		r, err := bench.RunStampede(context.Background(), srv.Addr(), row, cfg)
		if err != nil || r.Errors != 0 || r.Loads != 1 || r.Gets != cfg.Goroutines*cfg.Rounds {
			t.Fatalf("%s: %+v, %v; want one load per stampede and no error", row.Name, r, err)
		}
	}
}
