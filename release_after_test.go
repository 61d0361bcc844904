package dlock_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/dlock-go/dlock"
	"github.com/dlock-go/dlock/internal/testenv"
	"github.com/dlock-go/dlock/internal/testenv/lockenv"
	"github.com/dlock-go/dlock/redistest"
)

// ReleaseAfter keeps a renewed lock in Redis for the time asked, and no
// longer renews it: it expires then, and the Lock is over at once.
func TestReleaseAfter(t *testing.T) {
	t.Parallel()
	e := setup(t)
	key := testenv.Key(t)
	const ttl, keep = 300 * time.Millisecond, 2 * time.Second
	lock := obtainRenewed(t, e.locker, key, ttl)
	if err := lock.ReleaseAfter(context.Background(), keep); err != nil {
		t.Fatalf("ReleaseAfter: %v", err)
	}
	select {
	case <-lock.Done():
	default:
		t.Error("Done is open after ReleaseAfter")
	}
	if err := lock.Err(); !errors.Is(err, dlock.ErrReleased) {
		t.Errorf("Err after ReleaseAfter = %v, want ErrReleased", err)
	}
	if pttl := e.rdb.PTTL(context.Background(), key).Val(); pttl <= ttl || pttl > keep {
		t.Errorf("PTTL after ReleaseAfter(%v) = %v, want about %[1]v", keep, pttl)
	}
	if _, err := e.locker.TryObtain(context.Background(), key, ttl); !errors.Is(err, dlock.ErrNotObtained) {
		t.Errorf("TryObtain while it is kept = %v, want ErrNotObtained", err)
	}
	if err := lock.Refresh(context.Background(), ttl); !errors.Is(err, dlock.ErrNotHeld) {
		t.Errorf("Refresh after ReleaseAfter = %v, want ErrNotHeld", err)
	}
	// Nothing renews it any more: the key expires when the hold is over.
	testenv.Eventually(t, 2*keep, "the kept lock expiring", func() bool {
		return e.rdb.Exists(context.Background(), key).Val() == 0
	})
}

// ReleaseAfter of a lock that is not ours any more changes nothing; under
// a millisecond it releases at once.
func TestReleaseAfterEdges(t *testing.T) {
	t.Parallel()
	e := setup(t)
	key := testenv.Key(t)
	lock := mustObtain(t, e.locker, key, time.Minute)
	e.rdb.Set(context.Background(), key, "someone else", time.Minute)
	if err := lock.ReleaseAfter(context.Background(), time.Minute); !errors.Is(err, dlock.ErrNotHeld) {
		t.Errorf("ReleaseAfter of a lock taken over = %v, want ErrNotHeld", err)
	}
	if v := value(t, e.rdb, key); v != "someone else" {
		t.Errorf("the other holder's key = %q after ReleaseAfter, want it untouched", v)
	}
	if pttl := e.rdb.PTTL(context.Background(), key).Val(); pttl < 50*time.Second {
		t.Errorf("the other holder's PTTL = %v after ReleaseAfter, want it untouched", pttl)
	}

	other := testenv.Key(t) + ":now"
	lock = mustObtain(t, e.locker, other, time.Minute)
	if err := lock.ReleaseAfter(context.Background(), 0); err != nil {
		t.Fatalf("ReleaseAfter(0): %v", err)
	}
	if e.rdb.Exists(context.Background(), other).Val() != 0 {
		t.Error("ReleaseAfter(0) left the key in Redis, want it released at once")
	}
}

// When Redis does not answer, ReleaseAfter returns the error, and the lock
// stays as it was: renewed and held.
func TestReleaseAfterRedisPaused(t *testing.T) {
	t.Parallel()
	e := setup(t)
	key := testenv.Key(t)
	const ttl = 2 * time.Second
	lock := obtainRenewed(t, e.locker, key, ttl)
	e.srv.Pause()
	err := lock.ReleaseAfter(testenv.Timeout(t, 100*time.Millisecond), time.Minute)
	e.srv.Resume()
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("ReleaseAfter on a paused Redis = %v, want a deadline error", err)
	}
	if err := lock.Err(); err != nil {
		t.Fatalf("Err after a failed ReleaseAfter = %v, want nil", err)
	}
	// Still renewed: it outlives its ttl.
	deadline := time.Now().Add(ttl + ttl/2)
	for time.Now().Before(deadline) && lock.Err() == nil {
		time.Sleep(50 * time.Millisecond)
	}
	if err := lock.Err(); err != nil {
		t.Errorf("the lock ended after a failed ReleaseAfter: %v, want it renewed", err)
	}
	if err := lock.Release(context.Background()); err != nil {
		t.Errorf("Release: %v", err)
	}
}

// ReleaseAfter waits for an automatic refresh on its way, which would
// otherwise land after it and set the old ttl back.
func TestReleaseAfterDuringAutomaticRefresh(t *testing.T) {
	t.Parallel()
	srv := redistest.NewServer(t)
	rdb := srv.Client()
	hold := &holdFirstPipeline{entered: make(chan struct{}), release: make(chan struct{})}
	rdb.AddHook(hold)
	locker := lockenv.Locker(t, rdb)
	key := testenv.Key(t)
	const ttl, keep = 3 * time.Second, 10 * time.Second
	lock := obtainRenewed(t, locker, key, ttl)
	select {
	case <-hold.entered: // an automatic refresh is about to be sent
	case <-lock.Done(): // a machine so slow the renewer missed the whole ttl
		t.Fatalf("the lock ended before its first automatic refresh: %v", lock.Err())
	}
	done := make(chan error, 1)
	go func() { done <- lock.ReleaseAfter(context.Background(), keep) }()
	time.Sleep(20 * time.Millisecond) // time for a ReleaseAfter that did not wait to overtake it
	close(hold.release)
	if err := <-done; err != nil {
		t.Fatalf("ReleaseAfter: %v", err)
	}
	if pttl := srv.Client().PTTL(context.Background(), key).Val(); pttl <= ttl {
		t.Errorf("PTTL after ReleaseAfter(%v) = %v: the automatic refresh landed after it", keep, pttl)
	}
}
