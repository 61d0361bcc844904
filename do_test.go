package dlock_test

import (
	"context"
	"errors"
	"reflect"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dlock-go/dlock"
	"github.com/dlock-go/dlock/internal/testenv"
)

func TestDo(t *testing.T) {
	t.Parallel()
	e := setup(t)
	key := testenv.Key(t)
	const ttl = 300 * time.Millisecond
	ran := false
	if _, ok := dlock.LockFromContext(context.Background()); ok {
		t.Error("LockFromContext found a lock in a plain context")
	}
	err := e.locker.Do(context.Background(), key, ttl, func(ctx context.Context) error {
		ran = true
		lock, ok := dlock.LockFromContext(ctx)
		if !ok || lock.Key() != key || lock.Fence() <= 0 || holderOf(t, e.rdb, key) != lock.Token() {
			t.Errorf("LockFromContext = %v, %v; want the held lock", lock, ok)
		}
		if value(t, e.rdb, key) == "" {
			t.Error("the key is not set while fn runs")
		}
		time.Sleep(3 * ttl) // outlives the ttl: auto-renew keeps it
		if ctx.Err() != nil {
			t.Errorf("fn's context ended while the lock was held: %v", context.Cause(ctx))
		}
		return nil
	})
	if err != nil || !ran {
		t.Fatalf("Do = %v, ran %v; want nil, true", err, ran)
	}
	if n := e.rdb.Exists(context.Background(), key).Val(); n != 0 {
		t.Error("the key is still there after Do")
	}
}

func TestDoReturnsFnError(t *testing.T) {
	t.Parallel()
	e := setup(t)
	boom := errors.New("boom")
	err := e.locker.Do(context.Background(), testenv.Key(t), time.Second, func(context.Context) error { return boom })
	if !errors.Is(err, boom) || errors.Is(err, dlock.ErrLockLost) {
		t.Errorf("Do = %v, want fn's error alone", err)
	}
}

// The context fn gets is cancelled, with ErrLockLost as its cause, the
// moment the lock is lost; Do reports both fn's error and the loss.
func TestDoLockLost(t *testing.T) {
	t.Parallel()
	e := setup(t)
	key := testenv.Key(t)
	const ttl = 300 * time.Millisecond
	start := time.Now()
	err := e.locker.Do(context.Background(), key, ttl, func(ctx context.Context) error {
		e.rdb.Del(context.Background(), key)
		select {
		case <-ctx.Done():
		case <-time.After(5 * ttl):
			t.Error("fn's context not cancelled after the key was deleted")
		}
		if cause := context.Cause(ctx); !errors.Is(cause, dlock.ErrLockLost) {
			t.Errorf("cause = %v, want ErrLockLost", cause)
		}
		return ctx.Err()
	})
	if !errors.Is(err, dlock.ErrLockLost) || !errors.Is(err, context.Canceled) {
		t.Errorf("Do = %v, want ErrLockLost joined with fn's context.Canceled", err)
	}
	if took := time.Since(start); took > ttl {
		t.Errorf("the loss was noticed after %v, want within the first renewal (ttl/3)", took)
	}
}

func TestDoNotObtained(t *testing.T) {
	t.Parallel()
	e := setup(t)
	key := testenv.Key(t)
	mustObtain(t, e.locker, key, time.Minute)
	err := e.locker.Do(testenv.Timeout(t, 100*time.Millisecond), key, time.Minute, func(context.Context) error {
		t.Error("fn ran without the lock")
		return nil
	})
	if !errors.Is(err, dlock.ErrNotObtained) || !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Do = %v, want ErrNotObtained and DeadlineExceeded", err)
	}
}

// Two Do calls on one key never overlap.
func TestDoContention(t *testing.T) {
	t.Parallel()
	e := setup(t)
	key := testenv.Key(t)
	inside := make(chan struct{}, 1)
	errs := make(chan error, 4)
	for range 4 {
		go func() {
			errs <- e.locker.Do(testenv.Timeout(t, 5*time.Second), key, time.Second, func(context.Context) error {
				select {
				case inside <- struct{}{}:
				default:
					t.Error("two Do functions ran at once")
				}
				time.Sleep(20 * time.Millisecond)
				<-inside
				return nil
			})
		}()
	}
	for range 4 {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
}

// A panic in fn releases the lock and goes on up.
func TestDoPanic(t *testing.T) {
	t.Parallel()
	e := setup(t)
	key := testenv.Key(t)
	func() {
		defer func() {
			if r := recover(); r != "boom" {
				t.Errorf("recovered %v, want the panic of fn", r)
			}
		}()
		_ = e.locker.Do(context.Background(), key, time.Minute, func(context.Context) error { panic("boom") })
	}()
	if n := e.rdb.Exists(context.Background(), key).Val(); n != 0 {
		t.Error("the lock is still held after fn panicked")
	}
}

// The release at the end is sent even when the caller's context has ended.
func TestDoReleasesAfterCancel(t *testing.T) {
	t.Parallel()
	e := setup(t)
	key := testenv.Key(t)
	ctx, cancel := context.WithCancel(context.Background())
	err := e.locker.Do(ctx, key, time.Minute, func(ctx context.Context) error {
		cancel()
		<-ctx.Done()
		return ctx.Err()
	})
	if !errors.Is(err, context.Canceled) || errors.Is(err, dlock.ErrLockLost) {
		t.Errorf("Do = %v, want fn's context.Canceled alone", err)
	}
	if n := e.rdb.Exists(context.Background(), key).Val(); n != 0 {
		t.Error("the lock is still held after Do")
	}
}

func TestDoBadInputs(t *testing.T) {
	t.Parallel()
	e := setup(t)
	fn := func(context.Context) error { return nil }
	cases := []struct {
		name string
		do   func() error
		want error
	}{
		{"nil fn", func() error { return e.locker.Do(context.Background(), "k", time.Second, nil) }, dlock.ErrNilFunc},
		{"empty key", func() error { return e.locker.Do(context.Background(), "", time.Second, fn) }, dlock.ErrInvalidKey},
		{"zero ttl", func() error { return e.locker.Do(context.Background(), "k", 0, fn) }, dlock.ErrInvalidTTL},
		{"nil option", func() error { return e.locker.Do(context.Background(), "k", time.Second, fn, nil) }, dlock.ErrInvalidOption},
	}
	for _, tc := range cases {
		if err := tc.do(); !errors.Is(err, tc.want) {
			t.Errorf("%s: Do = %v, want %v", tc.name, err, tc.want)
		}
	}
}

// WithoutWait makes Do one attempt: of three callers at once, one runs
// its function, and the others get ErrNotObtained without waiting for it.
func TestDoWithoutWait(t *testing.T) {
	t.Parallel()
	e := setup(t)
	key := testenv.Key(t)
	finish := make(chan struct{})
	var ran atomic.Int32
	errs := make(chan error, 3)
	for range 3 {
		go func() {
			errs <- e.locker.Do(testenv.Timeout(t, 10*time.Second), key, time.Minute, func(context.Context) error {
				ran.Add(1)
				<-finish // until the others have given up
				return nil
			}, dlock.WithoutWait())
		}()
	}
	var obtained, refused int
	for i := range 3 {
		if i == 2 {
			close(finish) // two answered while the lock was held
		}
		switch err := <-errs; {
		case err == nil:
			obtained++
		case errors.Is(err, dlock.ErrNotObtained) && !errors.Is(err, context.DeadlineExceeded):
			refused++
		default:
			t.Errorf("Do WithoutWait = %v, want nil or ErrNotObtained", err)
		}
	}
	if obtained != 1 || refused != 2 || ran.Load() != 1 {
		t.Errorf("%d ran, %d refused (function ran %d times), want 1 and 2", obtained, refused, ran.Load())
	}
}

// WithMinHold keeps the lock after a quick function, until the minimum
// hold is over: a caller coming a little later does not run the function
// again. Obtain and TryObtain refuse it.
func TestDoWithMinHold(t *testing.T) {
	t.Parallel()
	e := setup(t)
	key := testenv.Key(t)
	const hold = 3 * time.Second
	runs := 0
	job := func(context.Context) error { runs++; return nil }
	if err := e.locker.Do(testenv.Timeout(t, 5*time.Second), key, time.Second, job, dlock.WithMinHold(hold), dlock.WithoutWait()); err != nil {
		t.Fatalf("Do: %v", err)
	}
	pttl := e.rdb.PTTL(context.Background(), key).Val()
	if pttl <= time.Second || pttl > hold {
		t.Errorf("PTTL after Do WithMinHold(%v) = %v, want the rest of the hold (over the ttl of 1s)", hold, pttl)
	}
	err := e.locker.Do(testenv.Timeout(t, 5*time.Second), key, time.Second, job, dlock.WithMinHold(hold), dlock.WithoutWait())
	if !errors.Is(err, dlock.ErrNotObtained) || runs != 1 {
		t.Errorf("a second Do during the hold = %v, and the job ran %d times; want ErrNotObtained and 1", err, runs)
	}
	// Obtain, TryObtain and the acquire methods take ObtainOptions only:
	// Obtain(ctx, key, ttl, WithMinHold(d)) does not compile.
	if reflect.TypeFor[dlock.DoOption]().AssignableTo(reflect.TypeFor[dlock.ObtainOption]()) {
		t.Error("a DoOption is an ObtainOption: WithMinHold and WithoutWait would compile in Obtain")
	}
	if !reflect.TypeFor[dlock.ObtainOption]().Implements(reflect.TypeFor[dlock.DoOption]()) {
		t.Error("an ObtainOption is not a DoOption: Do would not take WithAutoRenew and the others")
	}
	if err := e.locker.Do(context.Background(), key, time.Second, job, dlock.WithMinHold(-time.Second)); !errors.Is(err, dlock.ErrInvalidOption) {
		t.Errorf("WithMinHold(-1s) = %v, want ErrInvalidOption", err)
	}
	if err := e.locker.Do(context.Background(), key, time.Second, job, dlock.ObtainOption(nil)); !errors.Is(err, dlock.ErrInvalidOption) {
		t.Errorf("a nil ObtainOption in Do = %v, want ErrInvalidOption", err)
	}
}
