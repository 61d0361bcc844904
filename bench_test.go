package dlock_test

import (
	"context"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
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
// goroutines with a key each, mode=g8 and mode=g64 are 8 and 64 goroutines
// (rounded up to a multiple of GOMAXPROCS) with a key each: where concurrent
// calls of a Client go out together (natural batching).
//
//	dlock          TryObtain + Release, context.Background()
//	dlock-cancel   the same with a cancellable context: each call runs in a
//	               goroutine so it can return when the context ends
//	raw-set-del    SET key token NX PX ttl; DEL key (no ownership check)
//	raw-set-cad    SET key token NX PX ttl; compare-and-delete script (the
//	               usual correct hand-written lock, without a fence)
//	dlock-sem      Semaphore(key, 3).TryAcquire + Release
//	dlock-read     RWMutex(key).TryRLock + Release
//	dlock-write    RWMutex(key).TryLock + Release
//
// Serial rows also report redis-cpu-µs/op: the CPU time redis-server used
// per cycle (INFO cpu), which the load of the client's machine changes
// little; and redis-cmds/op: the commands Redis ran per cycle, those inside
// scripts included (INFO commandstats), which nothing changes.
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
		"dlock-sem": func(ctx context.Context, key string) error {
			permit, err := locker.Semaphore(key, 3).TryAcquire(ctx, ttl)
			if err != nil {
				return err
			}
			return permit.Release(ctx)
		},
		"dlock-read": func(ctx context.Context, key string) error {
			hold, err := locker.RWMutex(key).TryRLock(ctx, ttl)
			if err != nil {
				return err
			}
			return hold.Release(ctx)
		},
		"dlock-write": func(ctx context.Context, key string) error {
			hold, err := locker.RWMutex(key).TryLock(ctx, ttl)
			if err != nil {
				return err
			}
			return hold.Release(ctx)
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
		{"dlock-sem", context.Background(), "dlock-sem"},
		{"dlock-read", context.Background(), "dlock-read"},
		{"dlock-write", context.Background(), "dlock-write"},
	} {
		cycle := cycles[row.cycle]
		b.Run("lib="+row.lib+"/mode=serial", func(b *testing.B) {
			key := "bench:" + row.lib
			b.ReportAllocs()
			cpu, cmds := serverCPU(b, rdb), serverCommands(b, rdb)
			for b.Loop() {
				if err := cycle(row.ctx, key); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric((serverCPU(b, rdb)-cpu)/float64(b.N), "redis-cpu-µs/op")
			b.ReportMetric(float64(serverCommands(b, rdb)-cmds)/float64(b.N), "redis-cmds/op")
		})
		for _, mode := range []struct {
			name       string
			goroutines int // 0: GOMAXPROCS
		}{{"parallel", 0}, {"g8", 8}, {"g64", 64}} {
			b.Run("lib="+row.lib+"/mode="+mode.name, func(b *testing.B) {
				benchParallel(b, mode.goroutines, row.lib, func(key string) error { return cycle(row.ctx, key) })
			})
		}
	}
}

// serverCPU returns the CPU time redis-server has used (INFO cpu, user
// and system), in microseconds: its difference over a row is the part of
// the row's cost that the load of the client's machine does not change.
func serverCPU(b *testing.B, rdb *redis.Client) float64 {
	b.Helper()
	info, err := rdb.Info(context.Background(), "cpu").Result()
	if err != nil {
		b.Fatal(err)
	}
	var total float64
	for _, line := range strings.Split(info, "\n") {
		name, v, _ := strings.Cut(strings.TrimSpace(line), ":")
		if name == "used_cpu_user" || name == "used_cpu_sys" {
			seconds, _ := strconv.ParseFloat(v, 64)
			total += seconds * 1e6
		}
	}
	return total
}

// serverCommands returns how many commands redis-server has run (INFO
// commandstats), the commands that scripts run included and the EVALSHA or
// EVAL that runs a script not: a row's difference is the work Redis does
// per cycle, whatever the machine. INFO, CONFIG and SCRIPT are left out.
func serverCommands(b *testing.B, rdb *redis.Client) int64 {
	var total int64
	for _, n := range commandCounts(b, rdb) {
		total += n
	}
	return total
}

// benchParallel runs cycle in goroutines goroutines (0: GOMAXPROCS, else
// rounded up to a multiple of it), each on a key of its own.
func benchParallel(b *testing.B, goroutines int, name string, cycle func(key string) error) {
	var worker atomic.Int64
	procs := runtime.GOMAXPROCS(0)
	b.SetParallelism(max(1, (goroutines+procs-1)/procs))
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		key := "bench:" + name + ":" + strconv.FormatInt(worker.Add(1), 10)
		for pb.Next() {
			if err := cycle(key); err != nil {
				b.Error(err)
				return
			}
		}
	})
}

// BenchmarkRWMutexWriterUnderReaders measures how long a writer waits for
// an RW lock that a steady stream of readers keeps busy: 8 goroutines take
// read holds one after the other (each held 1ms), and each iteration is one
// writer's Lock and Release among them. writer-p50-ms, -p99-ms and -max-ms
// are the writer's waits, reads/op how many reads went through per write:
// a writer is not starved when its wait stays near a read's length however
// long the stream runs.
func BenchmarkRWMutexWriterUnderReaders(b *testing.B) {
	srv := redistest.NewServer(b)
	rdb := srv.Client()
	locker := dlock.New(rdb)
	b.Cleanup(func() { locker.Close() })
	const ttl = 10 * time.Second
	key := "bench:rw"
	ctx, stop := context.WithCancel(context.Background())
	var reads atomic.Int64
	var wg sync.WaitGroup
	for range 8 {
		rw := locker.RWMutex(key)
		wg.Go(func() {
			for ctx.Err() == nil {
				err := rw.RDo(ctx, ttl, func(context.Context) error {
					time.Sleep(time.Millisecond)
					return nil
				})
				if err == nil {
					reads.Add(1)
				}
			}
		})
	}
	for reads.Load() < 100 { // the stream is on
		time.Sleep(time.Millisecond)
	}
	writer := locker.RWMutex(key)
	var waits []time.Duration
	readsBefore := reads.Load()
	for b.Loop() {
		start := time.Now()
		w, err := writer.Lock(context.Background(), ttl)
		if err != nil {
			b.Fatal(err)
		}
		waits = append(waits, time.Since(start))
		if err := w.Release(context.Background()); err != nil {
			b.Fatal(err)
		}
	}
	slices.Sort(waits)
	ms := func(q float64) float64 {
		return float64(waits[min(len(waits)-1, int(q*float64(len(waits))))]) / float64(time.Millisecond)
	}
	b.ReportMetric(ms(0.5), "writer-p50-ms")
	b.ReportMetric(ms(0.99), "writer-p99-ms")
	b.ReportMetric(ms(1), "writer-max-ms")
	b.ReportMetric(float64(reads.Load()-readsBefore)/float64(b.N), "reads/op")
	stop()
	wg.Wait()
}
