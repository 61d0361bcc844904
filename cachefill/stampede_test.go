package cachefill_test

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/dlock-go/dlock/cachefill"
	"github.com/dlock-go/dlock/internal/testenv"
	"github.com/dlock-go/dlock/redistest"
)

// 50 Gets over 5 Caches, each with a Redis client of its own as separate
// processes would have, miss a cold key together: load runs once, every
// Get gets its value, and each Cache that waits for it runs the same few
// Redis commands (INFO commandstats, commands inside scripts included),
// however long the load takes: its read, and one blocking read of the
// loader's fill message, which wakes it with the value.
func TestStampedeLoadsOnce(t *testing.T) {
	t.Parallel()
	srv := redistest.NewServer(t)
	const caches, getsPerCache = 5, 10
	cs := make([]*cachefill.Cache, caches)
	ctx := testenv.Timeout(t, 20*time.Second)
	for i := range cs {
		// A Redis timeout longer than the test: no wait is cut in two.
		cs[i] = newCache(t, srv.Client(), cachefill.WithRedisTimeout(time.Minute))
		// A connection in each pool, and the scripts loaded, before counting.
		if _, err := cs[i].Get(ctx, testenv.NewKey(t), time.Minute, (&source{value: "warm"}).load); err != nil {
			t.Fatal(err)
		}
	}
	admin := srv.Client()
	if err := admin.ConfigResetStat(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	key := testenv.NewKey(t)
	g := newGate("hot", nil)
	var wg sync.WaitGroup
	results := make(chan string, caches*getsPerCache)
	for _, c := range cs {
		for range getsPerCache {
			wg.Go(func() {
				v, err := c.Get(ctx, key, time.Minute, g.load)
				if err != nil {
					t.Error(err)
				}
				results <- string(v)
			})
		}
	}
	testenv.Eventually(t, 10*time.Second, "one loader and four Caches blocked on its fill", func() bool {
		var sum cachefill.Counts
		for _, c := range cs {
			sum = sum.Add(cachefill.CountsOf(c))
		}
		return g.entered.Load() == 1 && sum.Waits == caches-1 && blockedClients(t, admin) == caches-1
	})
	close(g.open)
	wg.Wait()
	close(results)
	for v := range results {
		if v != "hot" {
			t.Errorf("a Get returned %q, want hot", v)
		}
	}
	if n := g.entered.Load(); n != 1 {
		t.Errorf("load ran %d times for 50 Gets over 5 Caches, want once", n)
	}
	stats := commandStats(t, admin)
	t.Logf("commands of the stampede: %v", stats)
	const waiting = caches - 1
	// A waiting Cache: its read (EVALSHA, HMGET, XREVRANGE for the last
	// fill message's ID, SET NX GET of the fill's claim, taken already),
	// and one XREAD, whose reply brings the value. The loader: its read,
	// which claims the fill and sees the lock free (EXISTS); its lock (EVALSHA, GET of the guard, SET,
	// TIME, GET and SET of the fence); its store (EVALSHA, GET, HGET, DEL,
	// HSET, XADD, PEXPIRE twice, DEL of the claim); its lock's release (a
	// script of dlock: EVALSHA, GET, DEL, SET of the release marker, EXISTS
	// of the guard, PUBLISH twice).
	if stats["xread"] != waiting || stats["xrevrange"] != caches {
		t.Errorf("%d XREAD and %d XREVRANGE, want one XREAD a waiting Cache (%d), and one XREVRANGE a Cache", stats["xread"], stats["xrevrange"], waiting)
	}
	const perWaiter, loader = 5, 5 + 6 + 9 + 7
	if total := stats["total"]; total > waiting*perWaiter+loader {
		t.Errorf("%d commands for the stampede, want at most %d a waiting Cache and %d the loader's: %d", total, perWaiter, loader, waiting*perWaiter+loader)
	}
}

// blockedClients returns how many clients the server has blocked in a
// command.
func blockedClients(t *testing.T, rdb *redis.Client) int {
	t.Helper()
	info, err := rdb.Info(context.Background(), "clients").Result()
	if err != nil {
		t.Fatal(err)
	}
	for line := range strings.SplitSeq(info, "\r\n") {
		if v, ok := strings.CutPrefix(line, "blocked_clients:"); ok {
			n, _ := strconv.Atoi(v)
			return n
		}
	}
	return -1
}

// commandStats returns the calls of each command since the last CONFIG
// RESETSTAT (lower case, as INFO names them), and their sum as "total",
// without those of INFO and CONFIG, which the test sends.
func commandStats(t *testing.T, rdb *redis.Client) map[string]int {
	t.Helper()
	info, err := rdb.Info(context.Background(), "commandstats").Result()
	if err != nil {
		t.Fatal(err)
	}
	stats := map[string]int{}
	for line := range strings.SplitSeq(info, "\r\n") {
		name, rest, ok := strings.Cut(strings.TrimPrefix(line, "cmdstat_"), ":calls=")
		if !ok || name == "info" || strings.HasPrefix(name, "config") {
			continue
		}
		calls, _, _ := strings.Cut(rest, ",")
		n, err := strconv.Atoi(calls)
		if err != nil {
			t.Fatalf("commandstats line %q: %v", line, err)
		}
		stats[name] += n
		stats["total"] += n
	}
	if len(stats) == 0 {
		t.Fatal(fmt.Errorf("no commandstats in %q", info))
	}
	return stats
}

// A Cache that waits for the fills of more keys at once than it reads fill
// messages blocked (each on a pooled connection) gets every value all the
// same, one load a key, and leaves its pool to its other calls.
func TestWaitsForManyKeys(t *testing.T) {
	t.Parallel()
	rdb := testenv.Client(t)
	loader, waiter := newCache(t, rdb), newCache(t, testenv.Client(t))
	const n = 12
	ctx := testenv.Timeout(t, 20*time.Second)
	keys := make([]string, n)
	gates := make([]*gate, n)
	var wg sync.WaitGroup
	for i := range keys {
		keys[i], gates[i] = testenv.NewKey(t), newGate(fmt.Sprint("v", i), nil)
		wg.Go(func() {
			if v, err := loader.Get(ctx, keys[i], time.Minute, gates[i].load); err != nil || string(v) != fmt.Sprint("v", i) {
				t.Errorf("loader Get %d = %q, %v", i, v, err)
			}
		})
	}
	testenv.Eventually(t, 10*time.Second, "every load running", func() bool {
		for _, g := range gates {
			if g.entered.Load() != 1 {
				return false
			}
		}
		return true
	})
	for i := range keys {
		wg.Go(func() {
			if v, err := waiter.Get(ctx, keys[i], time.Minute, gates[i].load); err != nil || string(v) != fmt.Sprint("v", i) {
				t.Errorf("waiter Get %d = %q, %v", i, v, err)
			}
		})
	}
	testenv.Eventually(t, 10*time.Second, "every key waited for", func() bool { return cachefill.CountsOf(waiter).Waits >= n })
	// The pool still serves the waiting Cache's other calls.
	if v, err := waiter.Get(ctx, testenv.NewKey(t), time.Minute, (&source{value: "other"}).load); err != nil || string(v) != "other" {
		t.Errorf("another Get while %d keys are waited for = %q, %v", n, v, err)
	}
	for _, g := range gates {
		close(g.open)
	}
	wg.Wait()
	for i, g := range gates {
		if k := g.entered.Load(); k != 1 {
			t.Errorf("key %d loaded %d times, want once", i, k)
		}
	}
}

// In a stampede over 2 Caches, the Gets of one context that ends mid-load
// return its cause at once, however many share it; the Gets of other
// contexts keep waiting and get the value of the one load.
func TestStampedeGetsOfAnEndedContextLeave(t *testing.T) {
	t.Parallel()
	srv := redistest.NewServer(t)
	cs := []*cachefill.Cache{newCache(t, srv.Client()), newCache(t, srv.Client())}
	key := testenv.NewKey(t)
	g := newGate("hot", nil)
	ctx := testenv.Timeout(t, 20*time.Second)
	impatient, cancel := context.WithCancelCause(ctx)
	why := errors.New("the client went away")
	type result struct {
		impatient bool
		v         string
		err       error
	}
	results := make(chan result, 40)
	var wg sync.WaitGroup
	for i := range 40 {
		c, mine := cs[i%2], ctx
		if i%4 < 2 {
			mine = impatient
		} else if i%4 == 3 {
			var stop context.CancelFunc
			mine, stop = context.WithCancel(ctx) // a context of its own
			defer stop()
		}
		wg.Go(func() {
			v, err := c.Get(mine, key, time.Minute, g.load)
			results <- result{mine == impatient, string(v), err}
		})
	}
	testenv.Eventually(t, 10*time.Second, "the load running", func() bool { return g.entered.Load() == 1 })
	cancel(why)
	for range 20 {
		if r := <-results; !r.impatient || !errors.Is(r.err, why) {
			t.Errorf("when the shared context ended: %+v; want a Get of it, with its cause", r)
		}
	}
	close(g.open)
	wg.Wait()
	close(results)
	for r := range results {
		if r.impatient || r.err != nil || r.v != "hot" {
			t.Errorf("a Get of another context: %+v, want the value", r)
		}
	}
	if n := g.entered.Load(); n != 1 {
		t.Errorf("load ran %d times, want once", n)
	}
}
