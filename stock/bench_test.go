package stock_test

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/dlock-go/dlock/internal/testenv"
	"github.com/redis/go-redis/v9"
)

// BenchmarkReserve times one Reserve of a unit on the shared server, by
// GOMAXPROCS goroutines, each order new.
func BenchmarkReserve(b *testing.B) {
	rdb := testenv.Client(b)
	inv := newInventory(b, rdb)
	ctx := context.Background()
	sku := testSKU(b, "item")
	mustSet(b, inv, sku, 1<<40)
	b.ReportAllocs()
	defer countCommands(b, rdb)()
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

// BenchmarkReserveCommit times a Reserve and a Commit of one order, one
// caller at a time: each call goes alone, as one script.
func BenchmarkReserveCommit(b *testing.B) {
	rdb := testenv.Client(b)
	inv := newInventory(b, rdb)
	ctx := context.Background()
	sku := testSKU(b, "item")
	mustSet(b, inv, sku, 1<<40)
	order := strconv.FormatInt(time.Now().UnixNano(), 36) + ":"
	b.ReportAllocs()
	defer countCommands(b, rdb)()
	for i := 0; b.Loop(); i++ {
		o := order + strconv.Itoa(i)
		if err := inv.Reserve(ctx, sku, o, 1, time.Minute); err != nil {
			b.Fatal(err)
		}
		if err := inv.Commit(ctx, sku, o); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkAdd times one Add, one caller at a time.
func BenchmarkAdd(b *testing.B) {
	rdb := testenv.Client(b)
	inv := newInventory(b, rdb)
	ctx := context.Background()
	sku := testSKU(b, "item")
	mustSet(b, inv, sku, 0)
	b.ReportAllocs()
	defer countCommands(b, rdb)()
	for b.Loop() {
		if err := inv.Add(ctx, sku, 1); err != nil {
			b.Fatal(err)
		}
	}
}

// countCommands reports, per op, the commands Redis ran (those the
// scripts call included) and the microseconds it spent in scripts, from
// its command statistics, when the returned function is called at the end
// of the benchmark. Redis's time varies less than the op's on a busy
// machine. The shared server must run nothing else meanwhile: run
// benchmarks alone (-run '^$').
func countCommands(b *testing.B, rdb *redis.Client) func() {
	ctx := context.Background()
	calls, usec := commandStats(ctx, b, rdb)
	return func() {
		calls2, usec2 := commandStats(ctx, b, rdb)
		b.ReportMetric(float64(calls2-calls-1)/float64(b.N), "redis-cmds/op") // less the INFO of before
		b.ReportMetric(float64(usec2-usec)/float64(b.N), "redis-µs/op")
	}
}

// commandStats returns the calls of every command in INFO commandstats,
// and the microseconds spent in EVALSHA and EVAL.
func commandStats(ctx context.Context, b *testing.B, rdb *redis.Client) (calls, scriptUsec int64) {
	info, err := rdb.Info(ctx, "commandstats").Result()
	if err != nil {
		b.Fatal(err)
	}
	for _, line := range strings.Split(info, "\n") {
		name, stats, ok := strings.Cut(strings.TrimSpace(line), ":calls=")
		if !ok {
			continue
		}
		fields := strings.Split(stats, ",")
		n, err := strconv.ParseInt(fields[0], 10, 64)
		if err != nil {
			b.Fatal(err)
		}
		calls += n
		if name != "cmdstat_evalsha" && name != "cmdstat_eval" {
			continue
		}
		for _, f := range fields[1:] {
			if v, ok := strings.CutPrefix(f, "usec="); ok {
				us, err := strconv.ParseInt(v, 10, 64)
				if err != nil {
					b.Fatal(err)
				}
				scriptUsec += us
			}
		}
	}
	return calls, scriptUsec
}
