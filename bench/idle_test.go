package bench_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/dlock-go/dlock/redistest"
)

// BenchmarkRoundTripAfterIdle is one GET after the client and the server
// were idle for a while, the sleep left out of the time: what the first
// round trip after a load costs, when every process waited on the load
// (the cache stampede of docs/benchmarks.md). On a VM whose idle vCPUs
// sleep, waking both sides costs more than the round trip itself.
//
//	go test -run '^$' -bench RoundTripAfterIdle -benchtime 40x
func BenchmarkRoundTripAfterIdle(b *testing.B) {
	srv := redistest.NewServer(b)
	ctx := context.Background()
	rdb := srv.Client()
	if err := rdb.Ping(ctx).Err(); err != nil {
		b.Fatal(err)
	}
	for _, idle := range []time.Duration{0, time.Millisecond, 10 * time.Millisecond, 100 * time.Millisecond} {
		b.Run("idle="+idle.String(), func(b *testing.B) {
			lat := make([]time.Duration, 0, b.N)
			for b.Loop() {
				b.StopTimer()
				time.Sleep(idle)
				b.StartTimer()
				start := time.Now()
				if err := rdb.Get(ctx, "bench-idle").Err(); !errors.Is(err, redis.Nil) {
					b.Fatal(err)
				}
				lat = append(lat, time.Since(start))
			}
			reportLatency(b, lat)
		})
	}
}
