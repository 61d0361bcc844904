package cachefill_test

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/dlock-go/dlock/cachefill"
	"github.com/dlock-go/dlock/internal/testenv"
	"github.com/dlock-go/dlock/redistest"
)

// A miss loads and stores; a hit returns the stored value without calling
// load, in one round trip, and takes no lock.
func TestGetMissThenHit(t *testing.T) {
	t.Parallel()
	srv := redistest.NewServer(t)
	var trips roundTrips
	rdb := srv.Client(func(o *redis.Options) { o.Dialer = trips.dial })
	cache := newCache(t, rdb)
	src := &source{value: "v1"}
	ctx := testenv.Timeout(t, 10*time.Second)
	key := testenv.NewKey(t)

	v, err := cache.Get(ctx, key, time.Minute, src.load)
	if err != nil || string(v) != "v1" {
		t.Fatalf("Get of a cold key = %q, %v; want v1", v, err)
	}
	// The loader releases its lock after its Get returned, in the
	// background (the waiters hear of the store, not of the release): wait
	// for it, and for every connection back in the pool, so that neither
	// the release nor a new connection's handshake is counted as the hits'.
	admin := srv.Client()
	testenv.Eventually(t, 10*time.Second, "the loader's lock released, its connection idle", func() bool {
		pool := rdb.PoolStats()
		return admin.Exists(ctx, cachefill.LockKey(cache, key)).Val() == 0 && pool.IdleConns == pool.TotalConns
	})
	before := trips.n.Load()
	for range 3 {
		v, err = cache.Get(ctx, key, time.Minute, src.load)
		if err != nil || string(v) != "v1" {
			t.Fatalf("Get of a warm key = %q, %v; want v1", v, err)
		}
	}
	if n := src.loads.Load(); n != 1 {
		t.Errorf("load ran %d times for a miss and three hits, want once", n)
	}
	if n := trips.n.Load() - before; n != 3 {
		t.Errorf("three hits took %d round trips, want 3", n)
	}
	if c := cachefill.CountsOf(cache); c.Hits != 3 || c.Misses != 1 || c.Waits != 0 {
		t.Errorf("counts %+v, want 3 hits and 1 miss, no wait", c)
	}
	v[0] = 'X' // the caller's own copy
	if v, _ := cache.Get(ctx, key, time.Minute, src.load); string(v) != "v1" {
		t.Errorf("a caller's change of its value reached the cache: %q", v)
	}
}

// The stored entry expires after the ttl less at most the jitter.
func TestGetStoresWithJitteredTTL(t *testing.T) {
	t.Parallel()
	rdb := testenv.Client(t)
	cache := newCache(t, rdb, cachefill.WithJitter(0.5))
	ctx := testenv.Timeout(t, 10*time.Second)
	src := &source{value: "v"}
	for i := range 20 {
		key := testenv.NewKey(t) + ":" + string(rune('a'+i))
		if _, err := cache.Get(ctx, key, time.Hour, src.load); err != nil {
			t.Fatal(err)
		}
		ttl := rdb.PTTL(ctx, cachefill.EntryKey(cache, key)).Val()
		if ttl > time.Hour || ttl < 30*time.Minute-time.Second {
			t.Errorf("entry stored for %v, want between 30m and 1h", ttl)
		}
		rdb.Del(ctx, cachefill.EntryKey(cache, key))
	}
}

// A value may hold any bytes, and be empty.
func TestGetBinaryAndEmptyValues(t *testing.T) {
	t.Parallel()
	cache := newCache(t, testenv.Client(t))
	ctx := testenv.Timeout(t, 10*time.Second)
	for i, want := range []string{"", "\x00\xff\r\n", string(make([]byte, 1<<20))} {
		key := testenv.NewKey(t) + ":" + string(rune('a'+i))
		load := func(context.Context) ([]byte, error) { return []byte(want), nil }
		for range 2 {
			v, err := cache.Get(ctx, key, time.Minute, load)
			if err != nil || string(v) != want {
				t.Fatalf("Get of value %d = %d bytes, %v; want %d bytes", i, len(v), err, len(want))
			}
		}
		testenv.Client(t).Del(ctx, cachefill.EntryKey(cache, key))
	}
}
