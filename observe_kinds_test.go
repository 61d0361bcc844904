package dlock_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/dlock-go/dlock/internal/testenv"
	"github.com/dlock-go/dlock/observe"
)

// A semaphore's permits and an RW lock's holds tell the events a lock
// tells, each with its kind.
func TestObserveKindsOfHold(t *testing.T) {
	t.Parallel()
	e, rec := setupObserved(t)
	ctx := context.Background()
	name := testenv.Key(t)

	sem := e.locker.Semaphore(name+":sem", 1)
	permit, err := sem.TryAcquire(ctx, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := sem.Acquire(testenv.Timeout(t, 50*time.Millisecond), time.Minute); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatal(err)
	}
	if err := permit.Release(ctx); err != nil {
		t.Fatal(err)
	}
	wantTypes(t, rec.types(name+":sem"), observe.EventObtain, observe.EventWaitStart, observe.EventWaitEnd, observe.EventObtain, observe.EventRelease)
	for _, ev := range rec.of(name + ":sem") {
		if ev.Kind != "semaphore" {
			t.Errorf("%v event of a semaphore has kind %q", ev.Type, ev.Kind)
		}
	}
	if got := rec.of(name + ":sem")[3]; got.Result != observe.ResultTimedOut {
		t.Errorf("the waiting Acquire: %+v, want timed out", got)
	}

	rw := e.locker.RWMutex(name + ":rw")
	read, err := rw.RLock(ctx, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if err := read.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if err := rw.Do(ctx, time.Minute, func(context.Context) error { return nil }); err != nil {
		t.Fatal(err)
	}
	wantTypes(t, rec.types(name+":rw"), observe.EventObtain, observe.EventRelease, observe.EventObtain, observe.EventRelease, observe.EventDo)
	for i, kind := range []string{"read", "read", "write", "write", "write"} {
		if ev := rec.of(name + ":rw")[i]; ev.Kind != kind {
			t.Errorf("%v event %d of an RW lock has kind %q, want %q", ev.Type, i, ev.Kind, kind)
		}
	}
	if release := rec.of(name + ":rw")[3]; !release.Ended || release.Err != nil {
		t.Errorf("the write hold's release %+v", release)
	}
}
