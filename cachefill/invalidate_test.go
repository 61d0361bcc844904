package cachefill_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dlock-go/dlock/cachefill"
	"github.com/dlock-go/dlock/internal/testenv"
)

// Invalidate under steady Gets from three Caches: they keep getting the old
// value while one of them loads the new one, once, and none misses.
func TestInvalidateUnderLoad(t *testing.T) {
	t.Parallel()
	opts := []cachefill.Option{cachefill.WithEarlyRefresh(0)}
	caches := []*cachefill.Cache{newCache(t, testenv.Client(t), opts...), newCache(t, testenv.Client(t), opts...), newCache(t, testenv.Client(t), opts...)}
	src := &versions{took: 20 * time.Millisecond}
	key := testenv.NewKey(t)
	ctx := testenv.Timeout(t, 10*time.Second)
	if _, err := caches[0].Get(ctx, key, time.Minute, src.load); err != nil {
		t.Fatal(err)
	}
	warm := sum(caches)
	var invalidated atomic.Bool
	hammer(t, caches, 3, key, time.Minute, src.load, func() bool {
		if !invalidated.Load() && sum(caches).Hits-warm.Hits > 100 {
			if err := caches[1].Invalidate(ctx, key); err != nil {
				t.Fatal(err)
			}
			invalidated.Store(true)
			return false
		}
		return invalidated.Load() && sum(caches).Refreshes > 0 && src.loads.Load() == 2 &&
			sum(caches).Hits-warm.Hits > 300
	})
	after := sum(caches)
	if n := src.loads.Load(); n != 2 {
		t.Errorf("%d loads, want one to fill and one after Invalidate", n)
	}
	if n := after.Misses - warm.Misses; n != 0 {
		t.Errorf("%d Gets missed after Invalidate, want none: it marks, it does not delete", n)
	}
	for _, c := range caches {
		if v, err := c.Get(ctx, key, time.Minute, src.load); err != nil || string(v) != "2" {
			t.Errorf("Get after the reload = %q, %v; want 2", v, err)
		}
	}
}

// A load that read the source before a change, and stores after the
// Invalidate that followed it, stores its value marked: it is loaded
// again at the next Get.
func TestInvalidateDuringLoad(t *testing.T) {
	t.Parallel()
	cache := newCache(t, testenv.Client(t), cachefill.WithEarlyRefresh(0))
	key := testenv.NewKey(t)
	ctx := testenv.Timeout(t, 10*time.Second)
	old := newGate("old", nil)
	var loads atomic.Int64
	load := func(ctx context.Context) ([]byte, error) {
		if loads.Add(1) == 1 {
			return old.load(ctx) // read before the change, stored after it
		}
		return []byte("new"), nil
	}
	got := make(chan result, 1)
	go func() {
		v, err := cache.Get(ctx, key, time.Minute, load)
		got <- result{string(v), err}
	}()
	testenv.Eventually(t, 10*time.Second, "the first load", func() bool { return old.entered.Load() == 1 })
	if err := cache.Invalidate(ctx, key); err != nil { // no entry yet: a mark
		t.Fatal(err)
	}
	close(old.open)
	if r := <-got; r.err != nil || r.value != "old" {
		t.Fatalf("Get = %q, %v; want the value of its load", r.value, r.err)
	}
	testenv.Eventually(t, 10*time.Second, "the marked value loaded again", func() bool {
		v, err := cache.Get(ctx, key, time.Minute, load)
		if err != nil {
			t.Fatal(err)
		}
		return string(v) == "new"
	})
	if n := loads.Load(); n != 2 {
		t.Errorf("%d loads, want 2", n)
	}
}

// Invalidate of a key never filled leaves a mark that a Get treats as a
// miss; bad input is an error.
func TestInvalidateWithoutEntry(t *testing.T) {
	t.Parallel()
	rdb := testenv.Client(t)
	cache := newCache(t, rdb)
	key := testenv.NewKey(t)
	ctx := testenv.Timeout(t, 10*time.Second)
	if err := cache.Invalidate(ctx, key); err != nil {
		t.Fatal(err)
	}
	if ttl := rdb.PTTL(ctx, cachefill.EntryKey(cache, key)).Val(); ttl <= 0 || ttl > time.Minute {
		t.Errorf("the mark lives %v, want as long as a load may run", ttl)
	}
	src := &source{value: "v"}
	for range 2 {
		if v, err := cache.Get(ctx, key, time.Minute, src.load); err != nil || string(v) != "v" {
			t.Fatalf("Get after Invalidate = %q, %v", v, err)
		}
	}
	if n := src.loads.Load(); n != 1 {
		t.Errorf("%d loads, want one: the load after the mark is not marked", n)
	}
}
