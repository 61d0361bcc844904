package dlock_test

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/dlock-go/dlock"
	"github.com/dlock-go/dlock/redistest"
)

// BenchmarkMultiCycle measures the cycle of a Lock over n keys,
// TryObtainMulti then Release, beside n single locks, TryObtain of each
// key then Release of each, serially, on one redis-server in one run: round
// trips per cycle are 2 against 2n. Each row also reports redis-cpu-µs/op
// and redis-cmds/op, as BenchmarkCycle's serial rows do.
func BenchmarkMultiCycle(b *testing.B) {
	srv := redistest.NewServer(b)
	rdb := srv.Client()
	locker := dlock.New(rdb)
	b.Cleanup(func() { locker.Close() })
	ctx := context.Background()
	const ttl = 10 * time.Second
	for _, n := range []int{2, 8} {
		keys := make([]string, n)
		for i := range keys {
			keys[i] = "{bench}:" + strconv.Itoa(i)
		}
		b.Run("keys="+strconv.Itoa(n)+"/lib=dlock-multi", func(b *testing.B) {
			b.ReportAllocs()
			cpu, cmds := serverCPU(b, rdb), serverCommands(b, rdb)
			defer reportServer(b, rdb, cpu, cmds)
			for b.Loop() {
				lock, err := locker.TryObtainMulti(ctx, keys, ttl)
				if err != nil {
					b.Fatal(err)
				}
				if err := lock.Release(ctx); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run("keys="+strconv.Itoa(n)+"/lib=dlock-single", func(b *testing.B) {
			b.ReportAllocs()
			cpu, cmds := serverCPU(b, rdb), serverCommands(b, rdb)
			defer reportServer(b, rdb, cpu, cmds)
			locks := make([]*dlock.Lock, n)
			for b.Loop() {
				for i, key := range keys {
					lock, err := locker.TryObtain(ctx, key, ttl)
					if err != nil {
						b.Fatal(err)
					}
					locks[i] = lock
				}
				for _, lock := range locks {
					if err := lock.Release(ctx); err != nil {
						b.Fatal(err)
					}
				}
			}
		})
	}
}

// reportServer reports the CPU time and the commands redis-server used per
// op since serverCPU and serverCommands gave cpu and cmds.
func reportServer(b *testing.B, rdb *redis.Client, cpu float64, cmds int64) {
	b.ReportMetric((serverCPU(b, rdb)-cpu)/float64(b.N), "redis-cpu-µs/op")
	b.ReportMetric(float64(serverCommands(b, rdb)-cmds)/float64(b.N), "redis-cmds/op")
}
