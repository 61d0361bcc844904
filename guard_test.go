package dlock_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dlock-go/dlock"
	"github.com/dlock-go/dlock/internal/door"
	"github.com/dlock-go/dlock/internal/testenv"
	"github.com/dlock-go/dlock/internal/testenv/lockenv"
	"github.com/dlock-go/dlock/observe"
)

func TestGuard(t *testing.T) {
	t.Parallel()
	e := setup(t)
	ctx := testenv.Timeout(t, 10*time.Second)
	key, result := "{"+testenv.Key(t)+"}:lock", "{"+testenv.Key(t)+"}:result"

	lock, err := e.locker.TryObtain(ctx, key, time.Minute, door.WithGuard[dlock.ObtainOption](result))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.locker.TryObtain(ctx, key, time.Minute, door.WithGuard[dlock.ObtainOption](result)); !errors.Is(err, dlock.ErrNotObtained) {
		t.Errorf("TryObtain while held = %v, want ErrNotObtained", err)
	}
	if err := door.ReleaseStoring(ctx, lock, result, []byte("charged 42"), time.Minute); err != nil {
		t.Fatal(err)
	}
	if got := value(t, e.rdb, result); got != "charged 42" {
		t.Errorf("the result key holds %q", got)
	}
	if !errors.Is(lock.Err(), dlock.ErrReleased) {
		t.Errorf("Err after ReleaseStoring = %v, want ErrReleased", lock.Err())
	}
	_, err = e.locker.TryObtain(ctx, key, time.Minute, door.WithGuard[dlock.ObtainOption](result))
	var guard *door.GuardError
	if !errors.As(err, &guard) || !errors.Is(err, door.ErrGuarded) || guard.Value != "charged 42" || guard.Key != result {
		t.Fatalf("TryObtain with the guard stored = %v, want a GuardError with the result", err)
	}
	if err := e.locker.Do(ctx, key, time.Minute, func(context.Context) error { return nil }, door.WithGuard[dlock.ObtainOption](result)); !errors.Is(err, door.ErrGuarded) {
		t.Errorf("Do with the guard stored = %v, want ErrGuarded", err)
	}
	var ended atomic.Int64
	observed := lockenv.Locker(t, e.rdb, dlock.WithObserver(observe.ObserverFunc(func(e observe.Event) {
		if e.Type == observe.EventRelease && e.Ended {
			ended.Add(1)
		}
	})))
	if _, err := observed.TryObtain(ctx, key, time.Minute, door.WithGuard[dlock.ObtainOption](result)); !errors.Is(err, door.ErrGuarded) {
		t.Errorf("TryObtain with an observer and the guard stored = %v, want ErrGuarded", err)
	}
	// An observer is told of a ReleaseStoring as of a release.
	second, err := observed.TryObtain(ctx, key+":2", time.Minute, door.WithGuard[dlock.ObtainOption](result+":2"))
	if err != nil {
		t.Fatal(err)
	}
	if err := door.ReleaseStoring(ctx, second, result+":2", []byte("x"), time.Minute); err != nil || ended.Load() != 1 {
		t.Errorf("ReleaseStoring with an observer = %v, %d release events that end the lock; want 1", err, ended.Load())
	}
	if v := value(t, e.rdb, key); v != "" {
		t.Errorf("the lock was taken: %q", v)
	}
	// A guard of another type exists too.
	other := "{" + testenv.Key(t) + "}:hash"
	if err := e.rdb.HSet(ctx, other, "f", "v").Err(); err != nil {
		t.Fatal(err)
	}
	if _, err := e.locker.TryObtain(ctx, key, time.Minute, door.WithGuard[dlock.ObtainOption](other)); !errors.As(err, &guard) || guard.Value != "" {
		t.Errorf("a guard of another type = %v, want a GuardError", err)
	}
}

// Waiters, plain and fair, are woken by the release that stores the guard
// and find it: none gets the lock.
func TestGuardWakesWaiters(t *testing.T) {
	t.Parallel()
	e := setup(t)
	ctx := testenv.Timeout(t, 20*time.Second)
	key, result := "{"+testenv.Key(t)+"}:lock", "{"+testenv.Key(t)+"}:result"
	lock, err := e.locker.TryObtain(ctx, key, time.Minute, door.WithGuard[dlock.ObtainOption](result))
	if err != nil {
		t.Fatal(err)
	}
	errs := make(chan error, 4)
	var lockers []*dlock.Client
	for i := range 4 {
		opts := []dlock.ObtainOption{door.WithGuard[dlock.ObtainOption](result), dlock.WithBackoff(dlock.FixedBackoff(time.Hour))}
		if i%2 == 1 {
			opts = append(opts, dlock.WithFair())
		}
		locker := lockenv.Locker(t, e.rdb)
		lockers = append(lockers, locker)
		go func() {
			_, err := locker.Obtain(ctx, key, time.Minute, opts...)
			errs <- err
		}()
		testenv.Eventually(t, 5*time.Second, "the waiter queued", func() bool {
			info, _ := e.locker.Inspect(ctx, key)
			return info.Waiters == i+1
		})
	}
	if err := door.ReleaseStoring(ctx, lock, result, []byte("done"), time.Minute); err != nil {
		t.Fatal(err)
	}
	for range 4 {
		var guard *door.GuardError
		if err := <-errs; !errors.As(err, &guard) || guard.Value != "done" {
			t.Errorf("a waiter got %v, want the guard", err)
		}
	}
	for _, locker := range lockers {
		locker.Close() // waits for the waiters' leaves, which must not pass the lock on
	}
	if v := value(t, e.rdb, key); v != "" {
		t.Errorf("a waiter took the lock: %q", v)
	}
}

// A holder whose lock is gone stores nothing.
func TestReleaseStoringNotHeld(t *testing.T) {
	t.Parallel()
	e := setup(t)
	ctx := testenv.Timeout(t, 10*time.Second)
	key, result := "{"+testenv.Key(t)+"}:lock", "{"+testenv.Key(t)+"}:result"
	lock := mustObtain(t, e.locker, key, time.Minute)
	e.rdb.Del(ctx, key)
	if err := door.ReleaseStoring(ctx, lock, result, []byte("late"), time.Minute); !errors.Is(err, dlock.ErrNotHeld) {
		t.Errorf("ReleaseStoring of a lost lock = %v, want ErrNotHeld", err)
	}
	if v := value(t, e.rdb, result); v != "" {
		t.Errorf("a lost lock stored %q", v)
	}
}

func TestGuardBadInputs(t *testing.T) {
	t.Parallel()
	e := setup(t)
	ctx := testenv.Timeout(t, 10*time.Second)
	key := "{" + testenv.Key(t) + "}:lock"
	if _, err := e.locker.TryObtain(ctx, key, time.Minute, door.WithGuard[dlock.ObtainOption]("another-slot")); !errors.Is(err, dlock.ErrInvalidKey) {
		t.Errorf("a guard in another slot = %v, want ErrInvalidKey", err)
	}
	if _, err := e.locker.Semaphore(key+":sem", 2).TryAcquire(ctx, time.Minute, door.WithGuard[dlock.ObtainOption](key+":g")); !errors.Is(err, dlock.ErrInvalidOption) {
		t.Errorf("a semaphore with a guard = %v, want ErrInvalidOption", err)
	}
	q := setupQuorum(t, 3)
	if _, err := q.locker.TryObtain(ctx, key, time.Minute, door.WithGuard[dlock.ObtainOption]("{"+testenv.Key(t)+"}:g")); !errors.Is(err, dlock.ErrInvalidOption) {
		t.Errorf("a guard on Redlock = %v, want ErrInvalidOption", err)
	}
	lock := mustObtain(t, e.locker, key, time.Minute)
	for _, tc := range []struct {
		key  string
		ttl  time.Duration
		want error
	}{
		{"", time.Minute, dlock.ErrInvalidKey},
		{"another-slot", time.Minute, dlock.ErrInvalidKey},
		{"{" + testenv.Key(t) + "}:r", 0, dlock.ErrInvalidTTL},
	} {
		if err := door.ReleaseStoring(ctx, lock, tc.key, nil, tc.ttl); !errors.Is(err, tc.want) {
			t.Errorf("ReleaseStoring(%q, %v) = %v, want %v", tc.key, tc.ttl, err, tc.want)
		}
	}
	if _, err := lock.TTL(ctx); err != nil {
		t.Errorf("the lock after refused ReleaseStoring calls: %v", err)
	}
	permit, err := e.locker.Semaphore(key+":sem", 2).TryAcquire(ctx, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if err := door.ReleaseStoring(ctx, permit, key+":r", nil, time.Minute); !errors.Is(err, dlock.ErrInvalidOption) {
		t.Errorf("ReleaseStoring of a permit = %v, want ErrInvalidOption", err)
	}
}

// Charge once: the first caller takes the lock and stores the result as it
// releases; a later caller's acquire finds the result instead of the lock.
func TestGuardChargeOnce(t *testing.T) {
	t.Parallel()
	e := setup(t)
	ctx := testenv.Timeout(t, 10*time.Second)
	lockKey, resultKey := "{"+testenv.Key(t)+"}:lock", "{"+testenv.Key(t)+"}:charge" // one hash tag: one Cluster slot
	charge := func() string {
		lock, err := e.locker.Obtain(ctx, lockKey, 10*time.Second, door.WithGuard[dlock.ObtainOption](resultKey))
		var done *door.GuardError
		if errors.As(err, &done) {
			return "already charged: " + done.Value
		}
		if err != nil {
			return err.Error()
		}
		receipt := "receipt 7" // the charge itself, done once
		if err := door.ReleaseStoring(ctx, lock, resultKey, []byte(receipt), 24*time.Hour); err != nil {
			return err.Error()
		}
		return "charged: " + receipt
	}
	for _, want := range []string{"charged: receipt 7", "already charged: receipt 7"} {
		if got := charge(); got != want {
			t.Errorf("charge() = %q, want %q", got, want)
		}
	}
}

// The door refuses what is not the root's type, without a panic.
func TestDoorRefusesOtherTypes(t *testing.T) {
	t.Parallel()
	if err := door.ReleaseStoring(t.Context(), "not a lock", "k", nil, time.Minute); !errors.Is(err, dlock.ErrInvalidOption) {
		t.Errorf("ReleaseStoring of a string = %v, want ErrInvalidOption", err)
	}
	if err := door.WaitReleaseOf(t.Context(), nil, "k", "f"); !errors.Is(err, dlock.ErrInvalidOption) {
		t.Errorf("WaitReleaseOf on nil = %v, want ErrInvalidOption", err)
	}
	if o := door.WithGuard[string]("k"); o != "" {
		t.Errorf("WithGuard[string] = %q, want the zero value", o)
	}
}
