package cachefill_test

import (
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/dlock-go/dlock/cachefill"
	"github.com/dlock-go/dlock/redistest"
)

// 50 Gets over 5 Caches, each with a Redis client of its own as separate
// processes would have, miss a cold key together: load runs once, every
// Get gets its value, and the Caches that wait for it send a bounded number
// of requests, however long the load takes: they are woken, not polling.
func TestStampedeLoadsOnce(t *testing.T) {
	t.Parallel()
	srv := redistest.NewServer(t)
	const caches, getsPerCache = 5, 10
	trips := make([]*roundTrips, caches)
	cs := make([]*cachefill.Cache, caches)
	for i := range cs {
		trips[i] = new(roundTrips)
		cs[i] = newCache(t, srv.Client(func(o *redis.Options) { o.Dialer = trips[i].dial }))
	}
	key := testKey(t)
	g := newGate("hot", nil)
	ctx := timeout(t, 20*time.Second)
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
	waiting := func() bool {
		var sum cachefill.Counts
		for _, c := range cs {
			sum = sum.Add(cachefill.CountsOf(c))
		}
		return g.entered.Load() == 1 && sum.Waits == caches-1
	}
	eventually(t, 10*time.Second, "one loader and four Caches waiting", waiting)
	// The channel on which dlock tells those that wait for a release
	// without taking the lock (Client.WaitRelease).
	channel := "dlock:watch:" + cachefill.LockKey(cs[0], key)
	rdb := srv.Client()
	eventually(t, 10*time.Second, "four Caches listening for the release", func() bool {
		return rdb.PubSubNumSub(ctx, channel).Val()[channel] == caches-1
	})
	before := make([]int64, caches)
	for i := range trips {
		before[i] = trips[i].n.Load()
	}
	// A Cache that polled would send requests meanwhile; one that listens
	// sends at most one, to look at the lock again once it listens.
	time.Sleep(300 * time.Millisecond)
	for i := range trips {
		if n := trips[i].n.Load() - before[i]; n > 1 {
			t.Errorf("Cache %d sent %d requests while it waited for the load", i, n)
		}
	}
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
	for i := range trips {
		t.Logf("Cache %d: %d requests for %d Gets, %+v", i, trips[i].n.Load(), getsPerCache, cachefill.CountsOf(cs[i]))
		// Connection set-up, read, lock, wait (subscribe, look, look
		// again), read; the loader also its lock's release and the store.
		if n := trips[i].n.Load(); n > 16 {
			t.Errorf("Cache %d sent %d requests for its %d Gets, want at most 16", i, n, getsPerCache)
		}
	}
}
