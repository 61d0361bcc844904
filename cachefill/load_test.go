package cachefill_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/dlock-go/dlock"
	"github.com/dlock-go/dlock/cachefill"
	"github.com/dlock-go/dlock/internal/testenv"
	"github.com/dlock-go/dlock/internal/testenv/lockenv"
)

// getAsync runs cache.Get in a goroutine of the test and returns its
// result's channel.
func getAsync(t *testing.T, wg *sync.WaitGroup, cache *cachefill.Cache, key string, load func(context.Context) ([]byte, error)) <-chan result {
	t.Helper()
	out := make(chan result, 1)
	ctx := testenv.Timeout(t, 20*time.Second)
	wg.Go(func() {
		v, err := cache.Get(ctx, key, time.Minute, load)
		out <- result{string(v), err}
	})
	return out
}

type result struct {
	value string
	err   error
}

// waitsFor returns when cache waits for another loader.
func waitsFor(t *testing.T, cache *cachefill.Cache) {
	t.Helper()
	testenv.Eventually(t, 10*time.Second, "a Cache waiting for a loader", func() bool {
		return cachefill.CountsOf(cache).Waits > 0
	})
}

// A loader whose process died holds the lock until its ttl runs out: a
// read meanwhile does not claim the fill (so no load starts), and a
// waiter, which looks again after the lock ttl of its Cache (the same as
// the dead loader's), loads.
func TestDeadLoaderIsReplacedAfterItsTTL(t *testing.T) {
	t.Parallel()
	rdb := testenv.Client(t)
	key := testenv.NewKey(t)
	cache := newCache(t, rdb, cachefill.WithLockTTL(300*time.Millisecond))
	// The dead loader: a lock taken on the key, never released.
	locker := dlock.New(rdb)
	defer locker.Close()
	if _, err := locker.TryObtain(context.Background(), cachefill.LockKey(cache, key), 300*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	src := &source{value: "fresh"}
	var wg sync.WaitGroup
	defer wg.Wait()
	got := getAsync(t, &wg, cache, key, src.load)
	waitsFor(t, cache)
	if n, err := rdb.Exists(context.Background(), cachefill.ClaimKey(cache, key)).Result(); n != 0 || err != nil {
		t.Errorf("claim keys while the lock is held: %d, %v; want none", n, err)
	}
	if r := <-got; r.err != nil || r.value != "fresh" {
		t.Fatalf("Get after a dead loader = %q, %v", r.value, r.err)
	}
	if c := cachefill.CountsOf(cache); c.Waits == 0 || src.loads.Load() != 1 {
		t.Errorf("counts %+v, loads %d: want a wait, then one load", c, src.loads.Load())
	}
}

// A load starts with the request for its lock. Where the lock is refused
// because something changed between the read that claimed the fill and
// that request (a background refresh elsewhere took the lock, or a caller
// whose claim was lost in a failover; or Invalidate marked the key, which
// the lock's guard sees), the load's context ends with a cause that says
// so and what it returns is dropped; the Get then gets the value of the
// next load: after the other caller's lock expired, or at once under its
// own lock where the key was marked.
func TestLoadOfARefusedLockIsDropped(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		change func(t *testing.T, cache *cachefill.Cache, key string)
		waits  bool
	}{
		{"another caller locked", func(t *testing.T, cache *cachefill.Cache, key string) {
			other := dlock.New(testenv.Client(t))
			t.Cleanup(func() { other.Close() })
			if _, err := other.TryObtain(context.Background(), cachefill.LockKey(cache, key), 300*time.Millisecond); err != nil {
				t.Errorf("the other caller's lock: %v", err)
			}
		}, true},
		{"invalidated", func(t *testing.T, cache *cachefill.Cache, key string) {
			if err := cache.Invalidate(context.Background(), key); err != nil {
				t.Errorf("Invalidate: %v", err)
			}
		}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			key := testenv.NewKey(t)
			rdb := testenv.Client(t)
			cache := newCache(t, rdb, cachefill.WithLockTTL(300*time.Millisecond))
			rdb.AddHook(&afterClaim{claimKey: cachefill.ClaimKey(cache, key), do: func() { tc.change(t, cache, key) }})
			var calls atomic.Int32
			causes := make(chan error, 1)
			load := func(ctx context.Context) ([]byte, error) {
				if calls.Add(1) == 1 {
					<-ctx.Done()
					causes <- context.Cause(ctx)
					return []byte("dropped"), nil
				}
				return []byte("v"), nil
			}
			v, err := cache.Get(testenv.Timeout(t, 10*time.Second), key, time.Minute, load)
			if err != nil || string(v) != "v" {
				t.Fatalf("Get = %q, %v; want the second load's value", v, err)
			}
			select {
			case cause := <-causes:
				if !strings.Contains(fmt.Sprint(cause), "lock was not obtained") {
					t.Errorf("the first load's context ended with %v; want the refused lock", cause)
				}
			case <-time.After(10 * time.Second):
				t.Error("the first load's context did not end")
			}
			if n := calls.Load(); n != 2 {
				t.Errorf("%d loads, want the dropped one and the next", n)
			}
			if c := cachefill.CountsOf(cache); (c.Waits > 0) != tc.waits {
				t.Errorf("counts %+v: want a wait for the other caller: %v", c, tc.waits)
			}
		})
	}
}

// afterClaim is a go-redis hook that calls do once, right after the first
// read of a Cache that claimed the fill whose claim is claimKey.
type afterClaim struct {
	claimKey string
	do       func()
	once     sync.Once
}

func (h *afterClaim) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h *afterClaim) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

func (h *afterClaim) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		err := next(ctx, cmd)
		// read.lua's call: EVALSHA sha 4 entry filled claim lock token ttl,
		// whose reply {0, gen, 1, last} is a miss that claimed the fill.
		args := cmd.Args()
		if err != nil || len(args) != 9 || fmt.Sprint(args[5]) != h.claimKey {
			return err
		}
		if reply, ok := cmd.(*redis.Cmd).Val().([]any); ok && len(reply) == 4 && reply[0] == int64(0) && reply[2] == int64(1) {
			h.once.Do(h.do)
		}
		return err
	}
}

// A loader that loses its lock while it loads (here deleted, as an expiry
// would) stops waiting for its load: another Cache loads and stores, and
// the first one's Gets get that value; its own late value is not stored.
func TestLostLoaderLockLetsAnotherLoad(t *testing.T) {
	t.Parallel()
	rdb := testenv.Client(t)
	key := testenv.NewKey(t)
	opts := []cachefill.Option{cachefill.WithLockTTL(300 * time.Millisecond)}
	first, second := newCache(t, rdb, opts...), newCache(t, testenv.Client(t), opts...)
	slow := newGate("old", nil)
	var wg sync.WaitGroup
	defer wg.Wait()
	defer close(slow.open)
	got1 := getAsync(t, &wg, first, key, slow.stubborn)
	testenv.Eventually(t, 10*time.Second, "the first load", func() bool { return slow.entered.Load() == 1 })
	got2 := getAsync(t, &wg, second, key, (&source{value: "new"}).load)
	waitsFor(t, second)

	locker := dlock.New(rdb)
	defer locker.Close()
	if ok, err := locker.ForceRelease(context.Background(), cachefill.LockKey(first, key)); !ok || err != nil {
		t.Fatalf("ForceRelease = %v, %v", ok, err)
	}
	for i, got := range []<-chan result{got2, got1} {
		if r := <-got; r.err != nil || r.value != "new" {
			t.Errorf("Get %d = %q, %v; want the second loader's value", i, r.value, r.err)
		}
	}
	if c := cachefill.CountsOf(first); c.Loads != 1 {
		t.Errorf("first Cache %+v: want one load, given up", c)
	}
	if c := cachefill.CountsOf(second); c.Loads != 1 {
		t.Errorf("second Cache %+v: want one load", c)
	}
}

// A load that ignores its context past the load timeout is given up: its
// Gets get the timeout, and a waiter elsewhere loads.
func TestHungLoadTimesOut(t *testing.T) {
	t.Parallel()
	key := testenv.NewKey(t)
	hung := newGate("late", nil)
	first := newCache(t, testenv.Client(t), cachefill.WithLoadTimeout(200*time.Millisecond))
	second := newCache(t, testenv.Client(t))
	var wg sync.WaitGroup
	defer wg.Wait()
	defer close(hung.open)
	got1 := getAsync(t, &wg, first, key, hung.stubborn)
	testenv.Eventually(t, 10*time.Second, "the hung load", func() bool { return hung.entered.Load() == 1 })
	got2 := getAsync(t, &wg, second, key, (&source{value: "v"}).load)
	if r := <-got1; r.err == nil || !errors.Is(r.err, context.DeadlineExceeded) {
		t.Errorf("Get of a hung load = %q, %v; want a deadline error", r.value, r.err)
	}
	if r := <-got2; r.err != nil || r.value != "v" {
		t.Errorf("Get after a hung loader = %q, %v", r.value, r.err)
	}
}

// A Cache closed while it loads cancels the load and releases its lock, so
// a waiter elsewhere loads at once.
func TestCacheClosedMidLoad(t *testing.T) {
	t.Parallel()
	key := testenv.NewKey(t)
	first, err := cachefill.New(lockenv.Locker(t, nil), cachefill.WithLockTTL(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	second := newCache(t, testenv.Client(t))
	g := newGate("never", nil)
	var wg sync.WaitGroup
	defer wg.Wait()
	got1 := getAsync(t, &wg, first, key, g.load)
	testenv.Eventually(t, 10*time.Second, "the first load", func() bool { return g.entered.Load() == 1 })
	got2 := getAsync(t, &wg, second, key, (&source{value: "v"}).load)
	waitsFor(t, second)
	if err := first.Close(); err != nil {
		t.Fatal(err)
	}
	if r := <-got1; !errors.Is(r.err, cachefill.ErrClosed) && !errors.Is(r.err, context.Canceled) {
		t.Errorf("Get on a Cache closed mid-load = %q, %v; want ErrClosed or Canceled", r.value, r.err)
	}
	if r := <-got2; r.err != nil || r.value != "v" {
		t.Errorf("Get after the loader closed = %q, %v", r.value, r.err)
	}
}

// A load error reaches the Gets of the loader's process and is not
// cached: a waiter elsewhere loads next, and so does a later Get.
func TestLoadErrorIsNotCached(t *testing.T) {
	t.Parallel()
	key := testenv.NewKey(t)
	first, second := newCache(t, testenv.Client(t)), newCache(t, testenv.Client(t))
	boom := errors.New("database on fire")
	failing := newGate("", boom)
	var wg sync.WaitGroup
	defer wg.Wait()
	got1 := getAsync(t, &wg, first, key, failing.load)
	testenv.Eventually(t, 10*time.Second, "the failing load", func() bool { return failing.entered.Load() == 1 })
	got1b := getAsync(t, &wg, first, key, failing.load) // shares the first one's load
	src := &source{value: "v"}
	got2 := getAsync(t, &wg, second, key, src.load)
	waitsFor(t, second)
	close(failing.open)
	for _, got := range []<-chan result{got1, got1b} {
		if r := <-got; !errors.Is(r.err, boom) {
			t.Errorf("Get of the failed load = %q, %v; want its error", r.value, r.err)
		}
	}
	if r := <-got2; r.err != nil || r.value != "v" {
		t.Errorf("waiter after a failed load = %q, %v; want its own load's value", r.value, r.err)
	}
	if n := failing.entered.Load(); n != 1 {
		t.Errorf("the failing load ran %d times, want once", n)
	}
	// Nothing of the error was stored: the next Get of another value loads.
	testenv.Client(t).Del(context.Background(), cachefill.EntryKey(first, key))
	if _, err := first.Get(testenv.Timeout(t, 10*time.Second), key, time.Minute, src.load); err != nil {
		t.Fatal(err)
	}
	if n := src.loads.Load(); n != 2 {
		t.Errorf("loads after the error %d, want 2", n)
	}
}

// A load that panics is an error for its Gets, not a crash.
func TestLoadPanicIsAnError(t *testing.T) {
	t.Parallel()
	cache := newCache(t, testenv.Client(t))
	_, err := cache.Get(testenv.Timeout(t, 10*time.Second), testenv.NewKey(t), time.Minute, func(context.Context) ([]byte, error) {
		panic("oops")
	})
	if err == nil {
		t.Fatal("Get of a panicking load returned no error")
	}
}

// A caller that claimed a key's fill and died before it took the lock (its
// claim is there, no lock) holds up the others for the lock's ttl at most:
// then one of them loads.
func TestDeadClaimantIsReplaced(t *testing.T) {
	t.Parallel()
	rdb := testenv.Client(t)
	key := testenv.NewKey(t)
	cache := newCache(t, rdb, cachefill.WithLockTTL(300*time.Millisecond))
	ctx := testenv.Timeout(t, 10*time.Second)
	if err := rdb.Set(ctx, cachefill.ClaimKey(cache, key), "dead", 300*time.Millisecond).Err(); err != nil {
		t.Fatal(err)
	}
	src := &source{value: "fresh"}
	v, err := cache.Get(ctx, key, time.Minute, src.load)
	if err != nil || string(v) != "fresh" {
		t.Fatalf("Get after a dead claimant = %q, %v", v, err)
	}
	if c := cachefill.CountsOf(cache); c.Waits == 0 || src.loads.Load() != 1 {
		t.Errorf("counts %+v, loads %d: want a wait, then one load", c, src.loads.Load())
	}
}
