package cachefill_test

import (
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dlock-go/dlock/cachefill"
	"github.com/dlock-go/dlock/internal/testenv"
	"github.com/dlock-go/dlock/redistest"
)

// With Redis down, Get loads directly, once for concurrent Gets of a key
// in a process, and says so in the log; WithFallback(false) returns the
// error instead. Once Redis is back, the cache fills again.
func TestRedisDownLoadsDirectly(t *testing.T) {
	t.Parallel()
	srv := redistest.NewServer(t)
	var log logBuffer
	cache := newCache(t, srv.Client(), cachefill.WithLogger(log.logger()))
	strict := newCache(t, srv.Client(), cachefill.WithFallback(false))
	key := testenv.NewKey(t)
	ctx := testenv.Timeout(t, 10*time.Second)
	srv.Kill()

	g := newGate("direct", nil)
	var wg sync.WaitGroup
	for range 10 {
		wg.Go(func() {
			if v, err := cache.Get(ctx, key, time.Minute, g.load); err != nil || string(v) != "direct" {
				t.Errorf("Get with Redis down = %q, %v; want the load's value", v, err)
			}
		})
	}
	testenv.Eventually(t, 10*time.Second, "the direct load", func() bool { return g.entered.Load() == 1 })
	close(g.open)
	wg.Wait()
	if n := g.entered.Load(); n > 10 {
		t.Errorf("%d direct loads for 10 Gets", n)
	}
	if !strings.Contains(log.String(), "loading directly") {
		t.Errorf("no warning in the log: %q", log.String())
	}
	if _, err := strict.Get(ctx, key, time.Minute, g.load); err == nil {
		t.Errorf("Get WithFallback(false) with Redis down returned no error")
	}

	srv.Start()
	src := &source{value: "cached"}
	for range 2 {
		if v, err := cache.Get(ctx, key, time.Minute, src.load); err != nil || string(v) != "cached" {
			t.Fatalf("Get after Redis came back = %q, %v", v, err)
		}
	}
	if n := src.loads.Load(); n != 1 {
		t.Errorf("%d loads after Redis came back, want one, then a hit", n)
	}
}

// With Redis paused (it accepts requests and answers none), Get gives up
// on it after the Redis timeout and loads directly.
func TestRedisPausedLoadsDirectly(t *testing.T) {
	t.Parallel()
	srv := redistest.NewServer(t)
	cache := newCache(t, srv.Client(), cachefill.WithRedisTimeout(100*time.Millisecond))
	key := testenv.NewKey(t)
	src := &source{value: "direct"}
	if _, err := cache.Get(testenv.Timeout(t, 10*time.Second), key+":warm", time.Minute, src.load); err != nil {
		t.Fatal(err) // a connection in the pool, which the pause keeps open
	}
	srv.Pause()
	defer srv.Resume() // before the Cache's Close, which waits for the paused calls
	v, err := cache.Get(testenv.Timeout(t, 10*time.Second), key, time.Minute, src.load)
	if err != nil || string(v) != "direct" {
		t.Errorf("Get with Redis paused = %q, %v; want the load's value", v, err)
	}
	if c := cachefill.CountsOf(cache); c.Fallbacks != 1 {
		t.Errorf("counts %+v, want one fallback", c)
	}
}

// With Redis paused between the read that claimed a fill and the loader's
// request for its lock, the lock fails after the Redis timeout, and Get
// falls back on the load that started with that request: load runs once.
func TestRedisPausedAtTheLockLoadsOnce(t *testing.T) {
	t.Parallel()
	srv := redistest.NewServer(t)
	rdb := srv.Client()
	cache := newCache(t, rdb, cachefill.WithRedisTimeout(100*time.Millisecond))
	key := testenv.NewKey(t)
	src := &source{value: "direct"}
	if _, err := cache.Get(testenv.Timeout(t, 10*time.Second), key+":warm", time.Minute, src.load); err != nil {
		t.Fatal(err) // a connection in the pool, which the pause keeps open
	}
	rdb.AddHook(&afterClaim{claimKey: cachefill.ClaimKey(cache, key), do: srv.Pause})
	defer srv.Resume() // before the Cache's Close, which waits for the paused calls
	v, err := cache.Get(testenv.Timeout(t, 10*time.Second), key, time.Minute, src.load)
	if err != nil || string(v) != "direct" {
		t.Errorf("Get with Redis paused at the lock = %q, %v; want the load's value", v, err)
	}
	if n := src.loads.Load(); n != 2 {
		t.Errorf("load ran %d times in all, want once for the warm-up and once for the Get", n)
	}
	if c := cachefill.CountsOf(cache); c.Fallbacks != 1 || c.Loads != 2 {
		t.Errorf("counts %+v, want one fallback and two loads", c)
	}
}
