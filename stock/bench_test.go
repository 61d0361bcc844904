package stock_test

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// BenchmarkReserve times one Reserve of a unit on the shared server, by
// GOMAXPROCS goroutines, each order new.
func BenchmarkReserve(b *testing.B) {
	rdb := shared(b)
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
	rdb := shared(b)
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
	rdb := shared(b)
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

// countCommands reports the commands Redis ran per op (those the scripts
// call included) from its command statistics, when the returned function
// is called at the end of the benchmark. The shared server must run nothing
// else meanwhile: run benchmarks alone (-run '^$').
func countCommands(b *testing.B, rdb *redis.Client) func() {
	ctx := context.Background()
	before := totalCommands(b, ctx, rdb)
	return func() {
		n := totalCommands(b, ctx, rdb) - before - 1 // the INFO of before
		b.ReportMetric(float64(n)/float64(b.N), "redis-cmds/op")
	}
}

// totalCommands sums the calls of every command in INFO commandstats.
func totalCommands(b *testing.B, ctx context.Context, rdb *redis.Client) int64 {
	info, err := rdb.Info(ctx, "commandstats").Result()
	if err != nil {
		b.Fatal(err)
	}
	var total int64
	for _, line := range strings.Split(info, "\n") {
		_, stats, ok := strings.Cut(line, ":calls=")
		if !ok {
			continue
		}
		calls, _, _ := strings.Cut(stats, ",")
		n, err := strconv.ParseInt(calls, 10, 64)
		if err != nil {
			b.Fatal(err)
		}
		total += n
	}
	return total
}
