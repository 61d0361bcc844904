package main

import (
	"errors"
	"testing"
	"time"

	"github.com/dlock-go/dlock"
	"github.com/redis/go-redis/v9"
)

// TestLockOnEmbedded checks that the embedded Redis runs every dlock script
// as a real server does, and that its keys expire in real time.
func TestLockOnEmbedded(t *testing.T) {
	t.Parallel()
	e, err := startEmbedded()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.Close)
	rdb := redis.NewClient(&redis.Options{Addr: e.Addr()})
	t.Cleanup(func() { rdb.Close() })
	locker := dlock.New(rdb)
	t.Cleanup(func() { locker.Close() })
	ctx := t.Context()

	a, err := locker.TryObtain(ctx, "k", 100*time.Millisecond)
	if err != nil {
		t.Fatalf("TryObtain: %v", err)
	}
	if _, err := locker.TryObtain(ctx, "k", time.Second); !errors.Is(err, dlock.ErrNotObtained) {
		t.Errorf("TryObtain of a held lock: %v, want ErrNotObtained", err)
	}
	if err := a.Refresh(ctx, 150*time.Millisecond); err != nil {
		t.Errorf("Refresh: %v", err)
	}
	if ttl, err := a.TTL(ctx); err != nil || ttl <= 100*time.Millisecond || ttl > 150*time.Millisecond {
		t.Errorf("TTL after Refresh = %v, %v; want in (100ms, 150ms]", ttl, err)
	}

	// Obtain waits for the lock to expire, which needs the clock to move.
	b, err := locker.Obtain(ctx, "k", time.Second)
	if err != nil {
		t.Fatalf("Obtain after expiry: %v", err)
	}
	if b.Fence() <= a.Fence() {
		t.Errorf("fence %d after %d, want it larger", b.Fence(), a.Fence())
	}
	if err := a.Release(ctx); !errors.Is(err, dlock.ErrNotHeld) {
		t.Errorf("Release of an expired lock: %v, want ErrNotHeld", err)
	}
	if err := b.Release(ctx); err != nil {
		t.Errorf("Release: %v", err)
	}
	if n, err := rdb.Exists(ctx, "k").Result(); err != nil || n != 0 {
		t.Errorf("the key exists after Release: %d, %v", n, err)
	}

	if err := rdb.HSet(ctx, "h", "f", "v").Err(); err != nil {
		t.Fatal(err)
	}
	if _, err := locker.TryObtain(ctx, "h", time.Second); !errors.Is(err, dlock.ErrWrongType) {
		t.Errorf("TryObtain of a hash: %v, want ErrWrongType", err)
	}
}
