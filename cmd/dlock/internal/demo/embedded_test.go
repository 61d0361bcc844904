package demo

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/dlock-go/dlock"
	"github.com/dlock-go/dlock/internal/testenv"
)

// TestLockOnEmbedded checks that the embedded Redis runs every dlock script
// as a real server does, and that its keys expire in real time.
func TestLockOnEmbedded(t *testing.T) {
	t.Parallel()
	e, err := StartEmbedded()
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

// embeddedLocker starts an embedded Redis and returns a Client on it, all
// closed when the test ends.
func embeddedLocker(t *testing.T) (*redis.Client, *dlock.Client) {
	t.Helper()
	e, err := StartEmbedded()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.Close)
	rdb := redis.NewClient(&redis.Options{Addr: e.Addr()})
	t.Cleanup(func() { rdb.Close() })
	locker := dlock.New(rdb)
	t.Cleanup(func() { locker.Close() })
	return rdb, locker
}

// TestWaitOnEmbedded checks that the embedded Redis carries what Obtain
// waits on: a release message (SUBSCRIBE, and PUBLISH from a script) wakes
// a waiter whose backoff would let it sleep for a minute, plain or fair;
// and a fair waiter is counted (TIME and the sorted sets of the queue).
func TestWaitOnEmbedded(t *testing.T) {
	t.Parallel()
	_, locker := embeddedLocker(t)
	noPolling := dlock.WithBackoff(dlock.FixedBackoff(time.Minute))
	for _, fair := range []bool{false, true} {
		holder, err := locker.TryObtain(t.Context(), "k", time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		opts := []dlock.ObtainOption{noPolling}
		if fair {
			opts = append(opts, dlock.WithFair())
		}
		got := make(chan error, 1)
		go func() {
			ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
			defer cancel()
			lock, err := locker.Obtain(ctx, "k", time.Minute, opts...)
			if err == nil {
				err = lock.Release(ctx)
			}
			got <- err
		}()
		if fair {
			testenv.Eventually(t, 10*time.Second, "the fair waiter to queue", func() bool {
				info, err := locker.Inspect(t.Context(), "k")
				return err == nil && info.Waiters == 1
			})
		}
		time.Sleep(50 * time.Millisecond) // the waiter sleeps now
		if err := holder.Release(t.Context()); err != nil {
			t.Fatal(err)
		}
		if err := <-got; err != nil {
			t.Errorf("fair %t: the waiter was not woken by the release: %v", fair, err)
		}
	}
}

// TestAutoRenewOnEmbedded checks that the embedded Redis runs the renewer's
// pipelines: a lock renewed automatically outlives its ttl, and is reported
// lost when its key is deleted.
func TestAutoRenewOnEmbedded(t *testing.T) {
	t.Parallel()
	const ttl = 100 * time.Millisecond
	rdb, locker := embeddedLocker(t)
	lock, err := locker.TryObtain(t.Context(), "k", ttl, dlock.WithAutoRenew(true))
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(4 * ttl)
	if err := lock.Err(); err != nil {
		t.Fatalf("the lock ended while renewed: %v", err)
	}
	if _, err := locker.TryObtain(t.Context(), "k", ttl); !errors.Is(err, dlock.ErrNotObtained) {
		t.Errorf("TryObtain of the renewed lock: %v, want ErrNotObtained", err)
	}
	if err := rdb.Del(t.Context(), "k").Err(); err != nil {
		t.Fatal(err)
	}
	select {
	case <-lock.Done():
		if !errors.Is(lock.Err(), dlock.ErrLockLost) {
			t.Errorf("Err() = %v, want ErrLockLost", lock.Err())
		}
	case <-time.After(10 * time.Second): // only ends a hung test: the next refresh finds the key gone
		t.Error("the deleted lock was not reported lost")
	}
}

// TestEmbeddedExpiry checks that no key of the embedded Redis expires before
// its time to live, counted from before the command that set it was sent.
func TestEmbeddedExpiry(t *testing.T) {
	t.Parallel()
	const ttl = 20 * time.Millisecond
	rdb, _ := embeddedLocker(t)
	for i := range 20 {
		time.Sleep(time.Duration(i) * time.Millisecond / 4) // at varied times
		sent := time.Now()
		if err := rdb.Set(t.Context(), "k", "v", ttl).Err(); err != nil {
			t.Fatal(err)
		}
		for rdb.Exists(t.Context(), "k").Val() == 1 {
			time.Sleep(100 * time.Microsecond)
		}
		if lived := time.Since(sent); lived < ttl {
			t.Fatalf("a key with a ttl of %v expired %v after it was set", ttl, lived)
		}
	}
}
