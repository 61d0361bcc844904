package cachefill

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/dlock-go/dlock/internal/testenv/lockenv"
	"github.com/dlock-go/dlock/redistest"
)

// A loader whose lock is gone, or another's, stores nothing: a paused
// loader that comes back never overwrites the next loader's value. An
// Invalidate after the loader read gen marks what it stores.
func TestStoreOnlyWhileHolding(t *testing.T) {
	t.Parallel()
	rdb, c, k := newStoreEnv(t)
	ctx := context.Background()
	s := stored{value: []byte("late"), ttl: time.Minute, took: time.Millisecond, gen: "0"}

	if code, err := c.store(ctx, k, "paused-loader", s); err != nil || code != storeNotHeld {
		t.Errorf("store without the lock = %d, %v; want storeNotHeld", code, err)
	}
	rdb.Set(ctx, k.lock, "next-loader", time.Minute)
	if code, err := c.store(ctx, k, "paused-loader", s); err != nil || code != storeNotHeld {
		t.Errorf("store under another's lock = %d, %v; want storeNotHeld", code, err)
	}
	if n := rdb.Exists(ctx, k.entry).Val(); n != 0 {
		t.Fatalf("a loader without the lock stored an entry")
	}

	s.value = []byte("fresh")
	if code, err := c.store(ctx, k, "next-loader", s); err != nil || code != storeDone {
		t.Errorf("store under its own lock = %d, %v; want storeDone", code, err)
	}
	if err := c.Invalidate(ctx, "k"); err != nil {
		t.Fatal(err)
	}
	if code, err := c.store(ctx, k, "next-loader", s); err != nil || code != storeStale {
		t.Errorf("store after an Invalidate it did not see = %d, %v; want storeStale", code, err)
	}
	e, err := c.read(ctx, k, "reader")
	if err != nil || string(e.value) != "fresh" || !e.stale || e.gen != "1" || e.filler != "next-loader" {
		t.Errorf("read = %+v, %v; want the value, marked stale, gen 1", e, err)
	}
}

// The first read of a miss claims the fill, later ones find it claimed and
// name the last fill message; the store clears the claim and adds the
// message with the value after it, which readFill returns; a loader that
// gives up clears the claim and adds a message that says so.
func TestFillClaimAndMessages(t *testing.T) {
	t.Parallel()
	rdb, c, k := newStoreEnv(t)
	ctx := context.Background()
	read := func(token string) entry {
		t.Helper()
		e, err := c.read(ctx, k, token)
		if err != nil || e.found() {
			t.Fatalf("read by %s = %+v, %v; want a miss", token, e, err)
		}
		return e
	}

	if e := read("first"); !e.claimed || e.lastFill != "0-0" {
		t.Errorf("first read of a miss = %+v, want it claimed, no fill message yet", e)
	}
	waiter := read("second")
	if waiter.claimed {
		t.Errorf("second read of a miss = %+v, want it claimed by the first", waiter)
	}
	if e := read("first"); !e.claimed {
		t.Errorf("the first's read again = %+v, want its claim", e)
	}
	if m, err := c.readFill(ctx, k.filled, waiter.lastFill, time.Millisecond); err != nil || m != nil {
		t.Errorf("readFill before a fill = %+v, %v; want none", m, err)
	}

	// The loader gives up: claim cleared, a message after the waiter's.
	if err := c.gaveUp(ctx, k, "first"); err != nil {
		t.Fatal(err)
	}
	m, err := c.readFill(ctx, k.filled, waiter.lastFill, time.Second)
	if err != nil || m == nil || m.code != fillGaveUp {
		t.Errorf("readFill after a loader gave up = %+v, %v; want its message", m, err)
	}
	next := read("second")
	if !next.claimed || next.lastFill == waiter.lastFill {
		t.Errorf("read after the give-up = %+v, want the claim, and the give-up as the last message", next)
	}

	// The next loader stores: claim cleared, the value in the message.
	rdb.Set(ctx, k.lock, "second", time.Minute)
	if code, err := c.store(ctx, k, "second", stored{value: []byte("v"), ttl: time.Minute, took: time.Millisecond, gen: "0"}); err != nil || code != storeDone {
		t.Fatalf("store = %d, %v", code, err)
	}
	m, err = c.readFill(ctx, k.filled, next.lastFill, time.Second)
	if err != nil || m == nil || m.code != fillValue || string(m.value) != "v" {
		t.Errorf("readFill after the store = %+v, %v; want the value", m, err)
	}
	if n := rdb.Exists(ctx, k.claim).Val(); n != 0 {
		t.Errorf("the store left the fill's claim")
	}
	if ttl := rdb.PTTL(ctx, k.filled).Val(); ttl <= 0 || ttl > DefaultLockTTL {
		t.Errorf("fill messages live %v, want at most the lock's ttl", ttl)
	}

	// unclaim clears only the caller's own claim (in the background: Close
	// waits for it).
	other := keysOf(DefaultPrefix, "other")
	rdb.Set(ctx, other.claim, "another", time.Minute)
	c.unclaim(ctx, request{key: "other", keys: other, token: "mine"})
	rdb.Set(ctx, k.claim, "mine", time.Minute)
	c.unclaim(ctx, request{key: "k", keys: k, token: "mine"})
	c.Close()
	if v := rdb.Get(ctx, other.claim).Val(); v != "another" {
		t.Errorf("unclaim of another's claim left %q", v)
	}
	if n := rdb.Exists(ctx, k.claim).Val(); n != 0 {
		t.Errorf("unclaim left the caller's own claim")
	}
}

// newStoreEnv returns a client of a server of the test's own, a Cache on
// it (closed when the test ends), and the keys of key "k".
func newStoreEnv(t *testing.T) (*redis.Client, *Cache, keys) {
	t.Helper()
	rdb := redistest.NewServer(t).Client()
	c, err := New(lockenv.Locker(t, rdb))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return rdb, c, keysOf(DefaultPrefix, "k")
}
