package dlock_test

import (
	"context"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/dlock-go/dlock"
	"github.com/dlock-go/dlock/redistest"
)

// BenchmarkCycle measures one lock cycle, obtain then release of a free
// key, beside the floor: the same two steps as bare commands (SET NX PX, then
// DEL) sent with go-redis. All rows run in one process against one
// redis-server, so they compare like for like. docs/benchmarks.md has the
// numbers and scripts/bench runs them.
//
// Rows are named lib=.../mode=... so that benchstat -col /lib puts them side
// by side; mode=serial is one goroutine, mode=parallel is GOMAXPROCS
// goroutines with a key each.
//
//	dlock          TryObtain + Release, context.Background()
//	dlock-cancel   the same with a cancellable context: each call runs in a
//	               goroutine so it can return when the context ends
//	raw-set-del    SET key token NX PX ttl; DEL key (no ownership check)
//	raw-set-cad    SET key token NX PX ttl; compare-and-delete script (the
//	               usual correct hand-written lock, without a fence)
func BenchmarkCycle(b *testing.B) {
	srv := redistest.NewServer(b)
	rdb := srv.Client()
	locker := dlock.New(rdb)
	b.Cleanup(func() { locker.Close() })
	compareAndDelete := redis.NewScript(`if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) end return 0`)
	const ttl = 10 * time.Second

	cycles := map[string]func(ctx context.Context, key string) error{
		"dlock": func(ctx context.Context, key string) error {
			lock, err := locker.TryObtain(ctx, key, ttl)
			if err != nil {
				return err
			}
			return lock.Release(ctx)
		},
		"raw-set-del": func(ctx context.Context, key string) error {
			if err := rdb.SetNX(ctx, key, "token", ttl).Err(); err != nil {
				return err
			}
			return rdb.Del(ctx, key).Err()
		},
		"raw-set-cad": func(ctx context.Context, key string) error {
			if err := rdb.SetNX(ctx, key, "token", ttl).Err(); err != nil {
				return err
			}
			return compareAndDelete.Run(ctx, rdb, []string{key}, "token").Err()
		},
	}
	cancellable, cancel := context.WithCancel(context.Background())
	defer cancel()

	for _, row := range []struct {
		lib   string
		ctx   context.Context
		cycle string
	}{
		{"raw-set-del", context.Background(), "raw-set-del"}, // first: benchstat's base column
		{"raw-set-cad", context.Background(), "raw-set-cad"},
		{"dlock", context.Background(), "dlock"},
		{"dlock-cancel", cancellable, "dlock"},
	} {
		cycle := cycles[row.cycle]
		b.Run("lib="+row.lib+"/mode=serial", func(b *testing.B) {
			key := "bench:" + row.lib
			b.ReportAllocs()
			for b.Loop() {
				if err := cycle(row.ctx, key); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run("lib="+row.lib+"/mode=parallel", func(b *testing.B) {
			var worker atomic.Int64
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				key := "bench:" + row.lib + ":" + strconv.FormatInt(worker.Add(1), 10)
				for pb.Next() {
					if err := cycle(row.ctx, key); err != nil {
						b.Error(err)
						return
					}
				}
			})
		})
	}
}
