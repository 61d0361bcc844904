package dlock_test

import (
	"context"
	"testing"
	"time"

	"github.com/dlock-go/dlock"
	"github.com/dlock-go/dlock/internal/testenv"
	"github.com/dlock-go/dlock/internal/testenv/lockenv"
)

// noPolling is a Backoff so long that only a release message, or the
// holder's expiry, can wake a waiter within a test.
var noPolling = dlock.WithBackoff(dlock.FixedBackoff(time.Minute))

// obtainAsync starts Obtain in a goroutine and returns a channel that gets
// the time the lock was obtained (released at once) or the zero time.
func obtainAsync(t *testing.T, locker *dlock.Client, key string, opts ...dlock.ObtainOption) <-chan time.Time {
	got := make(chan time.Time, 1)
	go func() {
		lock, err := locker.Obtain(testenv.Timeout(t, 10*time.Second), key, time.Minute, opts...)
		if err != nil {
			t.Error(err)
			got <- time.Time{}
			return
		}
		got <- time.Now()
		_ = lock.Release(context.Background())
	}()
	return got
}

// waitSubscribed waits until the Redis server has a subscriber on key's
// release channel.
func waitSubscribed(t *testing.T, e *env, key string) {
	t.Helper()
	channel := "dlock:fence{" + key + "}"
	deadline := time.Now().Add(5 * time.Second)
	for e.rdb.PubSubNumSub(context.Background(), channel).Val()[channel] == 0 {
		if time.Now().After(deadline) {
			t.Fatalf("nobody subscribed to %s", channel)
		}
		time.Sleep(time.Millisecond)
	}
}

// A release wakes a waiter at once, though its Backoff says a minute.
func TestWakeOnRelease(t *testing.T) {
	t.Parallel()
	for _, mode := range []struct {
		name string
		opts []dlock.ObtainOption
	}{{"plain", []dlock.ObtainOption{noPolling}}, {"fair", []dlock.ObtainOption{noPolling, dlock.WithFair()}}} {
		t.Run(mode.name, func(t *testing.T) {
			t.Parallel()
			e := setup(t)
			key := testenv.Key(t)
			holder := mustObtain(t, e.locker, key, time.Minute)
			got := obtainAsync(t, lockenv.Locker(t, e.srv.Client()), key, mode.opts...)
			waitSubscribed(t, e, key)
			time.Sleep(20 * time.Millisecond) // the waiter is asleep now
			released := time.Now()
			if err := holder.Release(context.Background()); err != nil {
				t.Fatal(err)
			}
			if at := <-got; at.IsZero() || at.Sub(released) > time.Second {
				t.Errorf("the waiter got the lock %v after the release, want it woken by the release", at.Sub(released))
			}
		})
	}
}

// A holder that expires wakes its waiter when its time to live runs out.
func TestWakeOnExpiry(t *testing.T) {
	t.Parallel()
	e := setup(t)
	key := testenv.Key(t)
	const ttl = 300 * time.Millisecond
	start := time.Now()
	mustObtain(t, e.locker, key, ttl)
	at := <-obtainAsync(t, e.locker, key, noPolling)
	if took := at.Sub(start); at.IsZero() || took < ttl || took > ttl+time.Second {
		t.Errorf("the waiter got the lock %v after the holder's ttl of %v began", took, ttl)
	}
}

// A holder that releases without a message (a plain DEL, as other
// libraries do) is noticed after the Backoff's delay.
func TestWakeAfterSilentRelease(t *testing.T) {
	t.Parallel()
	e := setup(t)
	key := testenv.Key(t)
	e.rdb.Set(context.Background(), key, "held by another library", time.Minute)
	got := obtainAsync(t, e.locker, key, dlock.WithBackoff(dlock.FixedBackoff(50*time.Millisecond)))
	waitSubscribed(t, e, key)
	released := time.Now()
	e.rdb.Del(context.Background(), key)
	if at := <-got; at.IsZero() || at.Sub(released) > time.Second {
		t.Errorf("the waiter got the lock %v after the silent release", at.Sub(released))
	}
}

// The shared subscriber connection cut while a waiter sleeps: the waiter
// is woken when it is back, and still gets the lock without polling.
func TestWakeAfterSubscriberCut(t *testing.T) {
	t.Parallel()
	e := setup(t)
	key := testenv.Key(t)
	holder := mustObtain(t, e.locker, key, time.Minute)
	got := obtainAsync(t, lockenv.Locker(t, e.srv.Client()), key, noPolling)
	waitSubscribed(t, e, key)
	if err := e.rdb.Do(context.Background(), "CLIENT", "KILL", "TYPE", "pubsub").Err(); err != nil {
		t.Fatal(err)
	}
	if err := holder.Release(context.Background()); err != nil {
		t.Fatal(err)
	}
	if at := <-got; at.IsZero() {
		t.Error("the waiter did not get the lock")
	}
}

// Waiters of one Client share one subscription per key, and none is left
// when they are done.
func TestWaitersShareSubscription(t *testing.T) {
	t.Parallel()
	e := setup(t)
	key := testenv.Key(t)
	holder := mustObtain(t, e.locker, key, time.Minute)
	var got []<-chan time.Time
	for range 5 {
		got = append(got, obtainAsync(t, e.locker, key, noPolling))
	}
	waitSubscribed(t, e, key)
	channel := "dlock:fence{" + key + "}"
	if n := e.rdb.PubSubNumSub(context.Background(), channel).Val()[channel]; n != 1 {
		t.Errorf("%d subscriptions for 5 waiters of one Client, want 1", n)
	}
	if err := holder.Release(context.Background()); err != nil {
		t.Fatal(err)
	}
	for _, g := range got {
		if at := <-g; at.IsZero() {
			t.Error("a waiter did not get the lock")
		}
	}
}
