package dlock_test

import (
	"context"
	"runtime"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/dlock-go/dlock"
	"github.com/dlock-go/dlock/internal/testenv"
)

// Locks come and go without leaving goroutines: after renewed locks are
// released, Do returns and waiters give up, the Client runs what it ran
// before (its renewer and its subscriber), and after Close nothing at all.
// Not parallel: it counts the goroutines of the whole test binary.
func TestNoGoroutinesLeftBehind(t *testing.T) {
	before := goleak.IgnoreCurrent()
	e := setup(t)
	locker := dlock.New(e.rdb)
	ctx := context.Background()
	key := testenv.Key(t)

	cycle := func() {
		lock, err := locker.Obtain(ctx, key, time.Minute, dlock.WithAutoRenew(true))
		if err != nil {
			t.Fatal(err)
		}
		// A waiter that gives up, on the shared subscriber.
		if _, err := locker.Obtain(testenv.Timeout(t, 30*time.Millisecond), key, time.Minute, dlock.WithFair()); err == nil {
			t.Fatal("obtained a held lock")
		}
		if err := lock.Release(ctx); err != nil {
			t.Fatal(err)
		}
		if err := locker.Do(ctx, key, time.Minute, func(context.Context) error { return nil }); err != nil {
			t.Fatal(err)
		}
	}
	cycle() // starts the renewer and the subscriber
	settle := func() int {
		time.Sleep(100 * time.Millisecond) // background releases and leaves finish
		return runtime.NumGoroutine()
	}
	base := settle()
	for range 20 {
		cycle()
	}
	if n := settle(); n > base {
		t.Errorf("%d goroutines after 20 more cycles, %d after the first", n, base)
	}
	locker.Close()
	e.rdb.Close()
	e.srv.Kill()
	goleak.VerifyNone(t, before)
}
