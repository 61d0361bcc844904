package bench_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dlock-go/dlock/bench"
	"github.com/dlock-go/dlock/redistest"
)

// ttl is the time to live of the benchmarks' locks: far longer than any
// of them holds one.
const ttl = 10 * time.Second

// RoundEnv names the environment variable that scripts/bench-peers sets to
// the number of the round (1, 2, ...): the rows run in an order rotated by
// round-1, so that no row always runs first or last.
const RoundEnv = "PEERS_ROUND"

// goroutines are the concurrency levels of (a) and (e).
var goroutines = []int{1, 8, 64}

// BenchmarkUncontended is (a): obtain then release of a free key, by 1, 8
// and 64 goroutines sharing one Locker, each goroutine with a key of its
// own. Beside ns/op and allocs/op it reports the p50 and p99 latency of
// one obtain+release, as p50-ns and p99-ns.
func BenchmarkUncontended(b *testing.B) {
	srv := redistest.NewServer(b)
	runUncontended(b, rotated(b, bench.UncontendedRows()), bench.Env{Nodes: []string{srv.Addr()}, TTL: ttl})
}

// BenchmarkRedlock is (e): as (a), over 5 independent servers.
func BenchmarkRedlock(b *testing.B) {
	var nodes []string
	for _, srv := range redistest.NewServers(b, 5) {
		nodes = append(nodes, srv.Addr())
	}
	runUncontended(b, rotated(b, bench.RedlockRows()), bench.Env{Nodes: nodes, TTL: ttl})
}

func runUncontended(b *testing.B, rows []bench.Row, env bench.Env) {
	for _, row := range rows {
		locker, err := row.New(env)
		if err != nil {
			b.Fatalf("%s: %v", row.Name, err)
		}
		for _, g := range goroutines {
			b.Run(fmt.Sprintf("lib=%s/g=%d", row.Name, g), func(b *testing.B) {
				keys := make([]string, g)
				for i := range keys {
					keys[i] = b.Name() + ":" + strconv.Itoa(i)
				}
				ctx := context.Background()
				if row.Deadline {
					var cancel context.CancelFunc
					ctx, cancel = context.WithTimeout(ctx, 24*time.Hour) // never passes
					defer cancel()
				}
				cycles(ctx, b, locker, keys, env.Nodes)
			})
		}
		if err := locker.Close(); err != nil {
			b.Errorf("%s: Close: %v", row.Name, err)
		}
	}
}

// cycles runs b.N obtain+release cycles on len(keys) goroutines, one key
// each, every call with ctx, and reports their latency and the CPU time a
// cycle costs this process (client-cpu-ns/op) and the servers at nodes
// (server-cpu-ns/op). The latencies go to a slice allocated before the
// timer starts, at an index each goroutine takes from a counter, so that
// recording them neither allocates nor synchronises.
func cycles(ctx context.Context, b *testing.B, locker bench.Locker, keys []string, nodes []string) {
	lat := make([]time.Duration, b.N)
	var next atomic.Int64
	start := make(chan struct{})
	var wg sync.WaitGroup
	for _, key := range keys {
		wg.Go(func() {
			<-start
			for i := next.Add(1) - 1; i < int64(len(lat)); i = next.Add(1) - 1 {
				t0 := time.Now()
				h, err := locker.Obtain(ctx, key)
				if err == nil {
					err = h.Release(ctx)
				}
				lat[i] = time.Since(t0)
				if err != nil {
					b.Error(err)
					return
				}
			}
		})
	}
	b.ReportAllocs()
	cpu, err := bench.StartCPU(ctx, nodes)
	if err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	close(start)
	wg.Wait()
	b.StopTimer()
	client, server, err := cpu.Stop(ctx)
	if err != nil {
		b.Fatal(err)
	}
	reportLatency(b, lat)
	b.ReportMetric(float64(client.Nanoseconds())/float64(b.N), "client-cpu-ns/op")
	b.ReportMetric(float64(server.Nanoseconds())/float64(b.N), "server-cpu-ns/op")
}

// BenchmarkHandoff is (b): one op is one handoff. A holder holds the key,
// a waiter (another Locker, with its own connections) is blocked in the
// library's blocking obtain, and after 5 to 15 ms (uniformly random, so
// that pollers' phases do not line up) the holder releases. The latency is
// from the release call to the waiter's obtain returning, as p50-ns and
// p99-ns; ns/op is left out, as it would mostly count the hold. The waiter
// is the next holder. Run it with -benchtime Nx: an op takes milliseconds.
func BenchmarkHandoff(b *testing.B) {
	srv := redistest.NewServer(b)
	env := bench.Env{Nodes: []string{srv.Addr()}, TTL: ttl}
	for _, row := range rotated(b, bench.WaitingRows()) {
		b.Run("lib="+row.Name, func(b *testing.B) {
			var sides [2]bench.Locker
			for i := range sides {
				l, err := row.New(env)
				if err != nil {
					b.Fatal(err)
				}
				b.Cleanup(func() { _ = l.Close() })
				sides[i] = l
			}
			handoffs(b, sides, "handoff:"+row.Name)
		})
	}
}

func handoffs(b *testing.B, sides [2]bench.Locker, key string) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	held, err := sides[0].Obtain(ctx, key)
	if err != nil {
		b.Fatal(err)
	}
	lat := make([]time.Duration, b.N)
	type obtained struct {
		held bench.Held
		err  error
		at   time.Time
	}
	for i := range lat {
		got := make(chan obtained, 1)
		go func() {
			h, err := sides[(i+1)%2].Obtain(ctx, key)
			got <- obtained{h, err, time.Now()}
		}()
		time.Sleep(5*time.Millisecond + rand.N(10*time.Millisecond))
		released := time.Now()
		if err := held.Release(ctx); err != nil {
			b.Fatal(err)
		}
		w := <-got
		if w.err != nil {
			b.Fatal(w.err)
		}
		if w.at.Before(released) {
			b.Fatal("the waiter obtained the lock before the holder released it")
		}
		lat[i], held = w.at.Sub(released), w.held
	}
	_ = held.Release(ctx)
	b.ReportMetric(0, "ns/op")
	reportLatency(b, lat)
}

// reportLatency reports the median and 99th percentile of lat.
func reportLatency(b *testing.B, lat []time.Duration) {
	b.ReportMetric(float64(bench.Percentile(lat, 50)), "p50-ns")
	b.ReportMetric(float64(bench.Percentile(lat, 99)), "p99-ns")
}

// rotated returns rows in the order of this round (see RoundEnv).
func rotated(b *testing.B, rows []bench.Row) []bench.Row {
	round, err := strconv.Atoi(os.Getenv(RoundEnv))
	if err != nil || round < 1 {
		if v := os.Getenv(RoundEnv); v != "" {
			b.Fatalf("%s=%q: want a round number from 1", RoundEnv, v)
		}
		return rows
	}
	return bench.Rotate(rows, round-1)
}
