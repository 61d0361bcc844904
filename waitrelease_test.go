package dlock_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/dlock-go/dlock"
	"github.com/dlock-go/dlock/internal/testenv"
	"github.com/dlock-go/dlock/internal/testenv/lockenv"
)

// WaitRelease returns at once for a free lock, and otherwise when the
// holder releases it, woken by the release (the holder's ttl is a minute),
// also when a queued waiter takes the lock over at once; it takes nothing.
func TestWaitRelease(t *testing.T) {
	t.Parallel()
	e := setup(t)
	key := testenv.Key(t)
	if err := e.locker.WaitRelease(testenv.Timeout(t, 5*time.Second), key); err != nil {
		t.Fatalf("WaitRelease of a free lock: %v", err)
	}
	for _, queued := range []bool{false, true} {
		holder := mustObtain(t, e.locker, key, time.Minute)
		watcher := lockenv.Locker(t, e.srv.Client())
		done := make(chan error, 1)
		before := watchers(e, key)
		go func() { done <- watcher.WaitRelease(testenv.Timeout(t, 30*time.Second), key) }()
		waitWatching(t, e, key, before)
		next := make(chan *dlock.Lock, 1)
		if queued {
			go func() {
				lock, err := lockenv.Locker(t, e.srv.Client()).Obtain(testenv.Timeout(t, 30*time.Second), key, time.Minute)
				if err != nil {
					t.Error(err)
				}
				next <- lock
			}()
			waitQueued(t, e.rdb, key, 1)
		}
		select {
		case err := <-done:
			t.Fatalf("WaitRelease returned while the lock was held: %v", err)
		default:
		}
		if err := holder.Release(context.Background()); err != nil {
			t.Fatal(err)
		}
		if err := <-done; err != nil {
			t.Fatalf("WaitRelease (a waiter queued: %v): %v", queued, err)
		}
		if queued {
			if lock := <-next; lock != nil {
				_ = lock.Release(context.Background())
			}
		}
	}
	if n := e.rdb.Exists(context.Background(), key).Val(); n != 0 {
		t.Errorf("the lock is held after WaitRelease: it must take nothing")
	}
}

// WaitRelease ends with the context, with bad input and on a closed Client.
func TestWaitReleaseEnds(t *testing.T) {
	t.Parallel()
	e := setup(t)
	key := testenv.Key(t)
	holder := mustObtain(t, e.locker, key, time.Minute)
	defer holder.Release(context.Background())
	err := e.locker.WaitRelease(testenv.Timeout(t, 100*time.Millisecond), key)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("WaitRelease of a held lock, ctx ending = %v, want DeadlineExceeded", err)
	}
	if err := e.locker.WaitRelease(context.Background(), ""); !errors.Is(err, dlock.ErrInvalidKey) {
		t.Errorf("WaitRelease(\"\") = %v, want ErrInvalidKey", err)
	}
	closed := lockenv.Locker(t, e.srv.Client())
	done := make(chan error, 1)
	before := watchers(e, key)
	go func() { done <- closed.WaitRelease(testenv.Timeout(t, 30*time.Second), key) }()
	waitWatching(t, e, key, before)
	closed.Close()
	if err := <-done; !errors.Is(err, dlock.ErrClosed) {
		t.Errorf("WaitRelease on a Client closed meanwhile = %v, want ErrClosed", err)
	}
}

// On a Redlock, WaitRelease is woken by the release too.
func TestWaitReleaseRedlock(t *testing.T) {
	t.Parallel()
	e := setupQuorum(t, 3)
	key := testenv.Key(t)
	holder, err := e.locker.TryObtain(context.Background(), key, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- newRedlock(t, e.rdbs).WaitRelease(testenv.Timeout(t, 30*time.Second), key) }()
	time.Sleep(50 * time.Millisecond) // let it start waiting: a release before that is fine too
	if err := holder.Release(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatalf("WaitRelease on a Redlock: %v", err)
	}
}

// waitWatching waits until someone listens on the watch channel of key.
func waitWatching(t *testing.T, e *env, key string, before int64) {
	t.Helper()
	channel := "dlock:watch{" + key + "}"
	testenv.Eventually(t, 5*time.Second, "a new subscriber of "+channel, func() bool {
		return watchers(e, key) > before
	})
}

// watchers returns how many connections subscribe to the watch channel of
// key: a WaitRelease that returned leaves its Client's subscription to
// linger, so a test waits for one more than it found.
func watchers(e *env, key string) int64 {
	channel := "dlock:watch{" + key + "}"
	return e.rdb.PubSubNumSub(context.Background(), channel).Val()[channel]
}
