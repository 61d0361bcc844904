package dlock_test

import (
	"errors"
	"testing"
	"time"

	"github.com/dlock-go/dlock"
	"github.com/dlock-go/dlock/internal/door"
	"github.com/dlock-go/dlock/internal/testenv"
	"github.com/dlock-go/dlock/internal/testenv/lockenv"
)

// WaitReleaseOf waits for the holder it names only: it returns at once when
// another holder has the lock, and when the named one releases it, even if
// a waiter takes the lock over at once.
func TestWaitReleaseOf(t *testing.T) {
	t.Parallel()
	e := setup(t)
	key := testenv.Key(t)
	holder := mustObtain(t, e.locker, key, time.Minute)
	if err := door.WaitReleaseOf(testenv.Timeout(t, 5*time.Second), e.locker, key, "someone-else"); err != nil {
		t.Fatalf("WaitReleaseOf a holder that has not the lock: %v", err)
	}
	if err := door.WaitReleaseOf(t.Context(), e.locker, key, ""); !errors.Is(err, dlock.ErrInvalidOption) {
		t.Errorf("WaitReleaseOf with no fingerprint = %v, want ErrInvalidOption", err)
	}
	done := make(chan error, 1)
	before := watchers(e, key)
	go func() {
		done <- door.WaitReleaseOf(testenv.Timeout(t, 30*time.Second), lockenv.Locker(t, e.srv.Client()), key, holder.Fingerprint())
	}()
	waitWatching(t, e, key, before)
	next := make(chan *dlock.Lock, 1)
	go func() {
		lock, err := lockenv.Locker(t, e.srv.Client()).Obtain(testenv.Timeout(t, 30*time.Second), key, time.Minute)
		if err != nil {
			t.Error(err)
		}
		next <- lock
	}()
	waitQueued(t, e.rdb, key, 1)
	if err := holder.Release(t.Context()); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Errorf("WaitReleaseOf the holder that released: %v", err)
	}
	if lock := <-next; lock != nil {
		lock.Release(t.Context())
	}
}
