package cachefill

import (
	"context"
	"testing"
	"time"
)

// A copy of a store that go-redis resent, which runs after the first
// copy stored, changes nothing and answers as the first did: also after
// the loader released its lock (it did, once it had an answer), and after
// an Invalidate (then it says stale, as the entry is).
func TestStoreCopyAnswersAsTheFirst(t *testing.T) {
	t.Parallel()
	rdb, c, k := newStoreEnv(t)
	ctx := context.Background()
	s := stored{value: []byte("v"), ttl: time.Minute, took: time.Millisecond, gen: "0"}
	rdb.Set(ctx, k.lock, "loader", time.Minute)
	if code, err := c.store(ctx, k, "loader", s); err != nil || code != storeDone {
		t.Fatalf("store = %d, %v; want storeDone", code, err)
	}
	added := func() int64 {
		t.Helper()
		info, err := rdb.XInfoStream(ctx, k.filled).Result()
		if err != nil {
			t.Fatal(err)
		}
		return info.EntriesAdded
	}
	if code, err := c.store(ctx, k, "loader", s); err != nil || code != storeDone {
		t.Errorf("a copy of the store, the lock still held = %d, %v; want storeDone", code, err)
	}
	rdb.Del(ctx, k.lock) // the loader's release
	if code, err := c.store(ctx, k, "loader", s); err != nil || code != storeDone {
		t.Errorf("a copy of the store after the release = %d, %v; want storeDone", code, err)
	}
	rdb.Set(ctx, k.lock, "next-loader", time.Minute)
	if code, err := c.store(ctx, k, "loader", s); err != nil || code != storeDone {
		t.Errorf("a copy of the store, the lock another's = %d, %v; want storeDone", code, err)
	}
	if n := added(); n != 1 {
		t.Errorf("%d fill messages for one store and its copies, want 1", n)
	}
	if err := c.Invalidate(ctx, "k"); err != nil {
		t.Fatal(err)
	}
	if code, err := c.store(ctx, k, "loader", s); err != nil || code != storeStale {
		t.Errorf("a copy of the store after an Invalidate = %d, %v; want storeStale", code, err)
	}
	// Another loader's store, under its lock, is a store of its own.
	if code, err := c.store(ctx, k, "next-loader", stored{value: []byte("w"), ttl: time.Minute, took: time.Millisecond, gen: "1"}); err != nil || code != storeDone {
		t.Errorf("the next loader's store = %d, %v; want storeDone", code, err)
	}
	if n := added(); n != 2 {
		t.Errorf("%d fill messages after a second loader's store, want 2", n)
	}
}

// A copy of an Invalidate that go-redis resent (the same call's id) counts
// no second mark and answers as the first did, also after a store came in
// between (the store keeps the last Invalidate's id); another call counts.
func TestInvalidateCopyCountsOnce(t *testing.T) {
	t.Parallel()
	rdb, c, k := newStoreEnv(t)
	ctx := context.Background()
	invalidate := func(id string) int64 {
		t.Helper()
		code, err := invalidateScript.Run(ctx, rdb, []string{k.entry}, 60000, id).Int64()
		if err != nil {
			t.Fatal(err)
		}
		return code
	}
	gen := func() string {
		t.Helper()
		return rdb.HGet(ctx, k.entry, "g").Val()
	}
	if code := invalidate("a"); code != invalidateMarked {
		t.Errorf("Invalidate without an entry = %d, want invalidateMarked", code)
	}
	if code := invalidate("a"); code != invalidateMarked || gen() != "1" {
		t.Errorf("its copy = %d, g %s; want invalidateMarked, g 1", code, gen())
	}
	rdb.Set(ctx, k.lock, "loader", time.Minute)
	if code, err := c.store(ctx, k, "loader", stored{value: []byte("v"), ttl: time.Minute, took: time.Millisecond, gen: "1"}); err != nil || code != storeDone {
		t.Fatalf("store = %d, %v; want storeDone", code, err)
	}
	if code := invalidate("a"); code != invalidateMarked || gen() != "1" {
		t.Errorf("its copy after a store = %d, g %s; want invalidateMarked (as the first), g 1", code, gen())
	}
	if e, err := c.read(ctx, k, "reader"); err != nil || e.stale {
		t.Errorf("read = %+v, %v; want the stored value, not stale: the copy marked nothing", e, err)
	}
	if code := invalidate("b"); code != invalidateEntry || gen() != "2" {
		t.Errorf("another Invalidate = %d, g %s; want invalidateEntry, g 2", code, gen())
	}
	if code := invalidate("b"); code != invalidateEntry || gen() != "2" {
		t.Errorf("its copy = %d, g %s; want invalidateEntry, g 2", code, gen())
	}
}

// A copy of an unclaim that runs after the next caller claimed the fill
// leaves that claim alone.
func TestUnclaimCopyLeavesTheNextClaim(t *testing.T) {
	t.Parallel()
	rdb, _, k := newStoreEnv(t)
	ctx := context.Background()
	unclaim := func(token string) int64 {
		t.Helper()
		n, err := unclaimScript.Run(ctx, rdb, []string{k.claim}, token).Int64()
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	rdb.Set(ctx, k.claim, "first", time.Minute)
	if n := unclaim("first"); n != 1 {
		t.Errorf("unclaim = %d, want 1", n)
	}
	rdb.Set(ctx, k.claim, "next", time.Minute)
	if n := unclaim("first"); n != 0 {
		t.Errorf("its copy = %d, want 0", n)
	}
	if v := rdb.Get(ctx, k.claim).Val(); v != "next" {
		t.Errorf("the claim after the copy = %q, want the next caller's", v)
	}
}

// A copy of a loader's give-up that runs after the next caller claimed
// the fill leaves that claim alone, and tells the waiters nothing more.
func TestGaveUpCopyLeavesTheNextClaim(t *testing.T) {
	t.Parallel()
	rdb, c, k := newStoreEnv(t)
	ctx := context.Background()
	rdb.Set(ctx, k.claim, "first", time.Minute)
	if err := c.gaveUp(ctx, k, "loader"); err != nil {
		t.Fatal(err)
	}
	if n := rdb.Exists(ctx, k.claim).Val(); n != 0 {
		t.Errorf("the claim after the give-up exists, want it cleared")
	}
	rdb.Set(ctx, k.claim, "next", time.Minute)
	if err := c.gaveUp(ctx, k, "loader"); err != nil {
		t.Fatal(err)
	}
	if v := rdb.Get(ctx, k.claim).Val(); v != "next" {
		t.Errorf("the claim after the copy = %q, want the next caller's", v)
	}
	if info, err := rdb.XInfoStream(ctx, k.filled).Result(); err != nil || info.EntriesAdded != 1 {
		t.Errorf("fill messages added: %d, %v; want 1", info.EntriesAdded, err)
	}
	if err := c.gaveUp(ctx, k, "next-loader"); err != nil {
		t.Fatal(err)
	}
	if info, err := rdb.XInfoStream(ctx, k.filled).Result(); err != nil || info.EntriesAdded != 2 {
		t.Errorf("fill messages added after the next loader gave up: %d, %v; want 2", info.EntriesAdded, err)
	}
}
