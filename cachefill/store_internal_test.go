package cachefill

import (
	"context"
	"testing"
	"time"

	"github.com/dlock-go/dlock/redistest"
)

// A loader whose lock is gone, or another's, stores nothing: a paused
// loader that comes back never overwrites the next loader's value. An
// Invalidate after the loader read gen marks what it stores.
func TestStoreOnlyWhileHolding(t *testing.T) {
	t.Parallel()
	rdb := redistest.NewServer(t).Client()
	c := New(rdb)
	defer c.Close()
	ctx := context.Background()
	k := keysOf(DefaultPrefix, "k")
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
