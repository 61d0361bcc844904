package cachefill_test

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dlock-go/dlock"
	"github.com/dlock-go/dlock/cachefill"
	"github.com/dlock-go/dlock/internal/testenv"
	"github.com/dlock-go/dlock/internal/testenv/lockenv"
	"github.com/dlock-go/dlock/observe"
	"github.com/dlock-go/dlock/redistest"
)

// recorder is an observe.Observer that keeps the events it is told.
type recorder struct {
	mu     sync.Mutex
	events []observe.Event
}

func (r *recorder) Observe(e observe.Event) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = append(r.events, e)
}

// of returns the obtains and releases told so far of key.
func (r *recorder) of(key string) []observe.Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	var events []observe.Event
	for _, e := range r.events {
		if e.Key == key && (e.Type == observe.EventObtain || e.Type == observe.EventRelease) {
			events = append(events, e)
		}
	}
	return events
}

// A Cache takes its loaders' locks on the caller's Client: the Client's
// observer sees them and its holder name names them.
func TestCacheOnCallersClient(t *testing.T) {
	t.Parallel()
	rec := &recorder{}
	locker := lockenv.Locker(t, nil, dlock.WithObserver(rec), dlock.WithHolderName("catalog-3"))
	cache, err := cachefill.New(locker)
	if err != nil {
		t.Fatal(err)
	}
	defer cache.Close()
	ctx := testenv.Timeout(t, 10*time.Second)
	key := testenv.NewKey(t)
	lockKey := cachefill.LockKey(cache, key)

	var holder dlock.LockInfo
	load := func(ctx context.Context) ([]byte, error) {
		// A load starts before its lock is confirmed: look once the
		// observer was told of the obtain.
		testenv.Eventually(t, 10*time.Second, "the loader's obtain", func() bool { return len(rec.of(lockKey)) > 0 })
		var err error
		holder, err = locker.Inspect(ctx, lockKey)
		return []byte("v"), err
	}
	for range 2 { // a miss that loads, then a hit
		if v, err := cache.Get(ctx, key, time.Minute, load); err != nil || string(v) != "v" {
			t.Fatalf("Get = %q, %v", v, err)
		}
	}
	if holder.HolderName != "catalog-3" {
		t.Errorf("the loader's lock is held by %q, want the Client's holder name", holder.HolderName)
	}
	// The lock is released after the value is handed over.
	testenv.Eventually(t, 10*time.Second, "the loader's release", func() bool { return len(rec.of(lockKey)) >= 2 })
	events := rec.of(lockKey)
	if len(events) != 2 || events[0].Type != observe.EventObtain || events[0].Result != observe.ResultObtained ||
		events[1].Type != observe.EventRelease || !events[1].Ended {
		t.Fatalf("the observer saw %v of the loader's lock, want its obtain and its release", events)
	}
}

// The Cache reports to the Client's logger unless WithLogger says
// otherwise: here, that Redis failed and Get loads directly.
func TestCacheLogsToClientsLogger(t *testing.T) {
	t.Parallel()
	srv := redistest.NewServer(t)
	rdb := srv.Client(testenv.FastFail)
	logs := &testenv.Logs{}
	cache, err := cachefill.New(lockenv.Locker(t, rdb, dlock.WithLogger(slog.New(logs))))
	if err != nil {
		t.Fatal(err)
	}
	defer cache.Close()
	srv.Kill()
	ctx := testenv.Timeout(t, 10*time.Second)
	if v, err := cache.Get(ctx, testenv.NewKey(t), time.Minute, func(context.Context) ([]byte, error) { return []byte("v"), nil }); err != nil || string(v) != "v" {
		t.Fatalf("Get with Redis down = %q, %v; want the loaded value", v, err)
	}
	if len(logs.Matching(slog.LevelWarn, "cachefill: Redis failed; loading directly")) != 1 {
		t.Error("the fallback was not reported to the Client's logger")
	}
}

// A Redlock Client cannot check the loader's lock where the entry is
// stored: New refuses it, and says why.
func TestNewRefusesRedlock(t *testing.T) {
	t.Parallel()
	quorum := lockenv.Redlock(t, 3)
	cache, err := cachefill.New(quorum)
	if !errors.Is(err, cachefill.ErrInvalidOption) || cache != nil || !strings.Contains(err.Error(), "Redlock") {
		t.Fatalf("New(a Redlock Client) = %v, %v; want no Cache and ErrInvalidOption that names Redlock", cache, err)
	}
}

// Closing the Cache leaves the caller's Client working: the caller closes
// it, after the Cache.
func TestCloseLeavesTheClient(t *testing.T) {
	t.Parallel()
	locker := lockenv.Locker(t, nil)
	cache, err := cachefill.New(locker)
	if err != nil {
		t.Fatal(err)
	}
	if err := cache.Close(); err != nil {
		t.Fatal(err)
	}
	ctx := testenv.Timeout(t, 10*time.Second)
	lock, err := locker.TryObtain(ctx, testenv.NewKey(t), time.Minute)
	if err != nil {
		t.Fatalf("the Client after the Cache's Close: %v", err)
	}
	if err := lock.Release(ctx); err != nil {
		t.Fatal(err)
	}
}
