package cachefill_test

import (
	"context"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dlock-go/dlock/cachefill"
	"github.com/dlock-go/dlock/internal/testenv"
)

// versions is a source whose value is the number of loads so far; each
// load takes a while.
type versions struct {
	loads atomic.Int64
	took  time.Duration
}

func (s *versions) load(ctx context.Context) ([]byte, error) {
	t := time.NewTimer(s.took)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
		return nil, context.Cause(ctx)
	}
	return []byte(strconv.FormatInt(s.loads.Add(1), 10)), nil
}

// hammer runs Gets of key on every cache from workers goroutines each,
// with a short pause between two, until done returns true; it fails the
// test on any error, and on a value older than one the same goroutine got
// before.
func hammer(t *testing.T, caches []*cachefill.Cache, workers int, key string, ttl time.Duration, load func(context.Context) ([]byte, error), done func() bool) {
	t.Helper()
	ctx := testenv.Timeout(t, 20*time.Second)
	var stop atomic.Bool
	var wg sync.WaitGroup
	for _, c := range caches {
		for range workers {
			wg.Go(func() {
				last := 0
				for !stop.Load() && ctx.Err() == nil {
					v, err := c.Get(ctx, key, ttl, load)
					if err != nil {
						t.Error(err)
						return
					}
					n, _ := strconv.Atoi(string(v))
					if n < last {
						t.Errorf("a Get returned version %d after %d", n, last)
					}
					last = n
					time.Sleep(2 * time.Millisecond)
				}
			})
		}
	}
	testenv.Eventually(t, 15*time.Second, "the end of the hammering", done)
	stop.Store(true)
	wg.Wait()
}

func sum(caches []*cachefill.Cache) cachefill.Counts {
	var s cachefill.Counts
	for _, c := range caches {
		s = s.Add(cachefill.CountsOf(c))
	}
	return s
}

// A hot key is refreshed in the background before it expires: under steady
// Gets from two Caches, none misses while it is refreshed three times, and
// each refresh is one load.
func TestEarlyRefreshKeepsHotKeyWarm(t *testing.T) {
	t.Parallel()
	// With beta 2 and loads of 100ms, a Get 100ms before expiry draws a
	// refresh with a chance of 1-e^(-1/2); with a Get every 3ms or more
	// often, the first one to draw it does so about 600ms before expiry
	// or earlier, and the chance that none did before 100ms are left is
	// below e^-36.
	opts := []cachefill.Option{cachefill.WithEarlyRefresh(2), cachefill.WithJitter(0)}
	caches := []*cachefill.Cache{newCache(t, testenv.Client(t), opts...), newCache(t, testenv.Client(t), opts...)}
	src := &versions{took: 100 * time.Millisecond}
	key := testenv.NewKey(t)
	const ttl = 1500 * time.Millisecond
	if _, err := caches[0].Get(testenv.Timeout(t, 10*time.Second), key, ttl, src.load); err != nil {
		t.Fatal(err)
	}
	warm := sum(caches)
	hammer(t, caches, 4, key, ttl, src.load, func() bool { return src.loads.Load() >= 4 })
	after := sum(caches)
	if n := after.Misses - warm.Misses; n != 0 {
		t.Errorf("%d Gets missed the hot key while it was refreshed", n)
	}
	if after.Refreshes != after.Loads-1 || after.Loads != src.loads.Load() {
		t.Errorf("counts %+v, %d loads: want every load after the first to be a refresh", after, src.loads.Load())
	}
	t.Logf("%d hits, %d refreshes", after.Hits, after.Refreshes)
}

// WithEarlyRefresh(0) lets entries expire: the next Get misses.
func TestEarlyRefreshOff(t *testing.T) {
	t.Parallel()
	cache := newCache(t, testenv.Client(t), cachefill.WithEarlyRefresh(0), cachefill.WithJitter(0))
	src := &versions{}
	key := testenv.NewKey(t)
	ctx := testenv.Timeout(t, 10*time.Second)
	for range 2 {
		if _, err := cache.Get(ctx, key, 50*time.Millisecond, src.load); err != nil {
			t.Fatal(err)
		}
		time.Sleep(60 * time.Millisecond) // past the ttl: expired
	}
	if c := cachefill.CountsOf(cache); c.Misses != 2 || c.Refreshes != 0 {
		t.Errorf("counts %+v: want two misses, no refresh", c)
	}
}
