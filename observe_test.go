package dlock_test

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/dlock-go/dlock"
	"github.com/dlock-go/dlock/internal/testenv"
	"github.com/dlock-go/dlock/internal/testenv/lockenv"
	"github.com/dlock-go/dlock/observe"
)

// recorder is an Observer that keeps every Event, and a CallObserver that
// marks the context of every call it sees start.
type recorder struct {
	mu     sync.Mutex
	events []observe.Event
	starts []observe.EventType
}

// callMark is the context key under which recorder.StartCall puts the
// types of the calls started, outermost first.
type callMark struct{}

func (r *recorder) Observe(e observe.Event) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = append(r.events, e)
}

func (r *recorder) StartCall(e observe.Event) context.Context {
	r.mu.Lock()
	r.starts = append(r.starts, e.Type)
	r.mu.Unlock()
	outer, _ := e.Context.Value(callMark{}).([]observe.EventType)
	return context.WithValue(e.Context, callMark{}, append(slices.Clone(outer), e.Type))
}

// of returns the events on key so far.
func (r *recorder) of(key string) []observe.Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []observe.Event
	for _, e := range r.events {
		if e.Key == key {
			out = append(out, e)
		}
	}
	return out
}

// types returns the types of the events on key so far, leaving out node
// errors, whose number depends on timing.
func (r *recorder) types(key string) []observe.EventType {
	var out []observe.EventType
	for _, e := range r.of(key) {
		if e.Type != observe.EventNodeError {
			out = append(out, e.Type)
		}
	}
	return out
}

// await waits until an event of type typ on key came, and returns the
// first.
func (r *recorder) await(t *testing.T, key string, typ observe.EventType) observe.Event {
	t.Helper()
	var got observe.Event
	testenv.Eventually(t, 10*time.Second, "an event "+typ.String()+" on "+key, func() bool {
		for _, e := range r.of(key) {
			if e.Type == typ {
				got = e
				return true
			}
		}
		return false
	})
	return got
}

// last returns the last event of type typ on key.
func (r *recorder) last(t *testing.T, key string, typ observe.EventType) observe.Event {
	t.Helper()
	events := r.of(key)
	for i := len(events) - 1; i >= 0; i-- {
		if events[i].Type == typ {
			return events[i]
		}
	}
	t.Fatalf("no event %v on %s in %v", typ, key, r.types(key))
	return observe.Event{}
}

func wantTypes(t *testing.T, got []observe.EventType, want ...observe.EventType) {
	t.Helper()
	if !slices.Equal(got, want) {
		t.Fatalf("events %v, want %v", got, want)
	}
}

// withoutReleases returns types without the releases.
func withoutReleases(types []observe.EventType) []observe.EventType {
	return slices.DeleteFunc(types, func(t observe.EventType) bool { return t == observe.EventRelease })
}

// setupObserved is setup with a recorder as the Observer.
func setupObserved(t *testing.T, opts ...dlock.Option) (*env, *recorder) {
	t.Helper()
	rec := &recorder{}
	return setup(t, append([]dlock.Option{dlock.WithObserver(rec)}, opts...)...), rec
}

func TestObserveObtainRelease(t *testing.T) {
	t.Parallel()
	e, rec := setupObserved(t)
	key := testenv.Key(t)
	lock, err := e.locker.TryObtain(context.Background(), key, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if err := lock.Release(context.Background()); err != nil {
		t.Fatal(err)
	}
	wantTypes(t, rec.types(key), observe.EventObtain, observe.EventRelease)
	obtain, release := rec.of(key)[0], rec.of(key)[1]
	if obtain.Result != observe.ResultObtained || obtain.Attempts != 1 || obtain.Err != nil || obtain.Wait != 0 ||
		obtain.Kind != "lock" || obtain.Node != e.srv.Addr() || obtain.Duration <= 0 {
		t.Errorf("obtain event %+v", obtain)
	}
	if release.Err != nil || !release.Ended || release.Held <= 0 || release.Held < release.Duration {
		t.Errorf("release event %+v", release)
	}
	for _, ev := range []observe.Event{obtain, release} {
		if marks, _ := ev.Context.Value(callMark{}).([]observe.EventType); !slices.Equal(marks, []observe.EventType{ev.Type}) {
			t.Errorf("%v event's context carries the calls %v, want its own", ev.Type, marks)
		}
	}
	// A second release finds it gone: told, but it ends nothing.
	if err := lock.Release(context.Background()); !errors.Is(err, dlock.ErrNotHeld) {
		t.Fatal(err)
	}
	if again := rec.last(t, key, observe.EventRelease); !errors.Is(again.Err, dlock.ErrNotHeld) || again.Ended {
		t.Errorf("second release event %+v", again)
	}
}

func TestObserveTryObtainHeld(t *testing.T) {
	t.Parallel()
	e, rec := setupObserved(t)
	key := testenv.Key(t)
	mustObtain(t, e.locker, key, time.Minute)
	if _, err := e.locker.TryObtain(context.Background(), key, time.Minute); !errors.Is(err, dlock.ErrNotObtained) {
		t.Fatal(err)
	}
	wantTypes(t, rec.types(key), observe.EventObtain, observe.EventObtain)
	if got := rec.last(t, key, observe.EventObtain); got.Result != observe.ResultHeld || !errors.Is(got.Err, dlock.ErrNotObtained) {
		t.Errorf("event %+v, want result held", got)
	}
}

// A waiter is told it waits, then woken by the release, then obtains.
func TestObserveContention(t *testing.T) {
	t.Parallel()
	e, rec := setupObserved(t)
	key := testenv.Key(t)
	holder := mustObtain(t, e.locker, key, time.Minute)
	waiter := lockenv.Locker(t, e.srv.Client(), dlock.WithObserver(rec))
	got := make(chan error, 1)
	go func() {
		lock, err := waiter.Obtain(testenv.Timeout(t, 10*time.Second), key, time.Minute, noPolling)
		if err == nil {
			err = lock.Release(context.Background())
		}
		got <- err
	}()
	rec.await(t, key, observe.EventWaitStart)
	if err := holder.Release(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := <-got; err != nil {
		t.Fatal(err)
	}
	// The holder tells of its release once it has the answer, when the
	// waiter may have its lock already: the two goroutines' events mix.
	wantTypes(t, withoutReleases(rec.types(key)), observe.EventObtain, observe.EventWaitStart,
		observe.EventWaitEnd, observe.EventObtain)
	obtain := rec.last(t, key, observe.EventObtain)
	if obtain.Result != observe.ResultObtained || obtain.Attempts < 2 || !obtain.Woken || obtain.Wait <= 0 || obtain.Wait > obtain.Duration {
		t.Errorf("obtain event after waiting %+v, want obtained, woken, after 2 attempts or more", obtain)
	}
	if end := rec.last(t, key, observe.EventWaitEnd); end.Wait != obtain.Wait || end.Result != observe.ResultObtained {
		t.Errorf("wait end %+v, want the wait and result of %+v", end, obtain)
	}
}

func TestObserveTimeoutAndCancel(t *testing.T) {
	t.Parallel()
	e, rec := setupObserved(t)
	key := testenv.Key(t)
	mustObtain(t, e.locker, key, time.Minute)

	if _, err := e.locker.Obtain(testenv.Timeout(t, 50*time.Millisecond), key, time.Minute); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatal(err)
	}
	wantTypes(t, rec.types(key), observe.EventObtain, observe.EventWaitStart, observe.EventWaitEnd, observe.EventObtain)
	if got := rec.last(t, key, observe.EventObtain); got.Result != observe.ResultTimedOut || !errors.Is(got.Err, dlock.ErrNotObtained) {
		t.Errorf("event %+v, want timed out", got)
	}

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	got := make(chan error, 1)
	go func() {
		_, err := e.locker.Obtain(ctx, key, time.Minute)
		got <- err
	}()
	testenv.Eventually(t, 10*time.Second, "a second wait", func() bool { return len(rec.types(key)) == 5 })
	cancel()
	if err := <-got; !errors.Is(err, context.Canceled) {
		t.Fatal(err)
	}
	wantTypes(t, rec.types(key)[4:], observe.EventWaitStart, observe.EventWaitEnd, observe.EventObtain)
	if got := rec.last(t, key, observe.EventObtain); got.Result != observe.ResultCanceled {
		t.Errorf("event %+v, want canceled", got)
	}
}

// A lock renewed automatically and deleted behind its back: a refresh
// finds it gone, and it is lost.
func TestObserveLostByDelete(t *testing.T) {
	t.Parallel()
	e, rec := setupObserved(t)
	key := testenv.Key(t)
	lock, err := e.locker.TryObtain(context.Background(), key, 300*time.Millisecond, dlock.WithAutoRenew(true))
	if err != nil {
		t.Fatal(err)
	}
	if refresh := rec.await(t, key, observe.EventRefresh); refresh.Err != nil || !refresh.Auto || refresh.Context != nil {
		t.Errorf("automatic refresh event %+v", refresh)
	}
	e.rdb.Del(context.Background(), key)
	lost := rec.await(t, key, observe.EventLost)
	<-lock.Done()
	if lost.Reason != observe.LostNotHeld || !lost.Ended || !errors.Is(lost.Err, dlock.ErrLockLost) || lost.Held <= 0 {
		t.Errorf("lost event %+v, want not held", lost)
	}
	events := rec.types(key)
	if n := len(events); n < 3 || events[n-1] != observe.EventLost || events[n-2] != observe.EventRefresh {
		t.Fatalf("events %v, want a refresh then the loss last", events)
	}
	if refresh := rec.last(t, key, observe.EventRefresh); !errors.Is(refresh.Err, dlock.ErrNotHeld) {
		t.Errorf("refresh before the loss %+v, want ErrNotHeld", refresh)
	}
}

// A paused Redis answers no refresh: the lock is lost when its validity
// runs out, and the node error is told when the refresh fails.
func TestObserveLostByPause(t *testing.T) {
	t.Parallel()
	e, rec := setupObserved(t)
	key := testenv.Key(t)
	lock, err := e.locker.TryObtain(context.Background(), key, 600*time.Millisecond, dlock.WithAutoRenew(true))
	if err != nil {
		t.Fatal(err)
	}
	e.srv.Pause()
	defer e.srv.Resume()
	lost := rec.await(t, key, observe.EventLost)
	<-lock.Done()
	if lost.Reason != observe.LostExpired || !lost.Ended {
		t.Errorf("lost event %+v, want expired", lost)
	}
	// The refresh on its way fails later, when go-redis gives up reading
	// (its ReadTimeout): a node error, told although the lock is gone.
	nodeErr := rec.await(t, key, observe.EventNodeError)
	if nodeErr.Op != "refresh" || nodeErr.Node != e.srv.Addr() || nodeErr.Err == nil || nodeErr.Context != nil {
		t.Errorf("node error %+v, want the refresh's on %s", nodeErr, e.srv.Addr())
	}
	wantTypes(t, rec.types(key), observe.EventObtain, observe.EventLost)
}

// A lock nobody renews, refreshes or releases is told lost once its
// validity runs out; a Refresh puts that off.
func TestObserveLeftToExpire(t *testing.T) {
	t.Parallel()
	e, rec := setupObserved(t)
	key := testenv.Key(t)
	lock := mustObtain(t, e.locker, key, 100*time.Millisecond)
	if err := lock.Refresh(context.Background(), 200*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	lost := rec.await(t, key, observe.EventLost)
	if lost.Reason != observe.LostExpired || !lost.Ended || time.Now().Before(lock.Until()) {
		t.Errorf("lost event %+v, at Until %v", lost, lock.Until())
	}
	wantTypes(t, rec.types(key), observe.EventObtain, observe.EventRefresh, observe.EventLost)
	if refresh := rec.last(t, key, observe.EventRefresh); refresh.Err != nil || refresh.Auto {
		t.Errorf("refresh event %+v", refresh)
	}
	_ = lock.Release(context.Background())
	if release := rec.last(t, key, observe.EventRelease); release.Ended {
		t.Errorf("release after the loss ended the lock again: %+v", release)
	}
}

func TestObserveLostByClose(t *testing.T) {
	t.Parallel()
	e, rec := setupObserved(t)
	key := testenv.Key(t)
	mustObtainRenewed := func() {
		if _, err := e.locker.TryObtain(context.Background(), key, time.Minute, dlock.WithAutoRenew(true)); err != nil {
			t.Fatal(err)
		}
	}
	mustObtainRenewed()
	e.locker.Close()
	wantTypes(t, rec.types(key), observe.EventObtain, observe.EventLost)
	if lost := rec.last(t, key, observe.EventLost); lost.Reason != observe.LostClosed || !errors.Is(lost.Err, dlock.ErrClosed) {
		t.Errorf("lost event %+v, want closed", lost)
	}
}
