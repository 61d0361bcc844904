package dlock_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/dlock-go/dlock"
	"github.com/dlock-go/dlock/internal/testenv"
	"github.com/dlock-go/dlock/observe"
)

// Do tells of its obtain, its release and itself, each call under the
// context of the Do.
func TestObserveDo(t *testing.T) {
	t.Parallel()
	e, rec := setupObserved(t)
	key := testenv.Key(t)
	failed := errors.New("the work failed")
	err := e.locker.Do(context.Background(), key, time.Minute, func(context.Context) error { return failed })
	if !errors.Is(err, failed) {
		t.Fatal(err)
	}
	wantTypes(t, rec.types(key), observe.EventObtain, observe.EventRelease, observe.EventDo)
	if !slices.Equal(rec.starts, []observe.EventType{observe.EventDo, observe.EventObtain, observe.EventRelease}) {
		t.Errorf("calls started %v, want do, obtain, release", rec.starts)
	}
	want := map[observe.EventType][]observe.EventType{
		observe.EventObtain:  {observe.EventDo, observe.EventObtain},
		observe.EventRelease: {observe.EventDo, observe.EventRelease},
		observe.EventDo:      {observe.EventDo},
	}
	for _, ev := range rec.of(key) {
		if marks, _ := ev.Context.Value(callMark{}).([]observe.EventType); !slices.Equal(marks, want[ev.Type]) {
			t.Errorf("%v event's context carries the calls %v, want %v", ev.Type, marks, want[ev.Type])
		}
	}
	if do := rec.last(t, key, observe.EventDo); !errors.Is(do.Err, failed) || do.Duration <= 0 {
		t.Errorf("do event %+v", do)
	}
	if release := rec.last(t, key, observe.EventRelease); !release.Ended || release.Err != nil {
		t.Errorf("release event %+v", release)
	}
}

// A Redlock round that fails names the node that had not answered, but
// does not tell Observers of it: the node's call goes on, and tells of its
// own failure if it fails, so a failure is told once.
func TestObserveRedlockStragglerToldOnce(t *testing.T) {
	t.Parallel()
	rec := &recorder{}
	e := setupQuorum(t, 3, dlock.WithObserver(rec), dlock.WithNodeTimeout(200*time.Millisecond))
	key := testenv.Key(t)
	e.srvs[1].Kill()
	slow := e.srvs[2]
	slow.Pause()
	_, err := e.locker.TryObtain(context.Background(), key, time.Minute)
	var qErr *dlock.QuorumError
	if !errors.As(err, &qErr) || !strings.Contains(err.Error(), "no answer before the round ended") {
		t.Fatalf("TryObtain = %v, want a QuorumError naming node 2 unanswered", err)
	}
	slow.Kill()                              // the call on its way fails now, if it has not yet
	if err := e.locker.Close(); err != nil { // waits for every call on its way
		t.Fatal(err)
	}
	var told []observe.Event
	for _, ev := range rec.of(key) {
		if ev.Type == observe.EventNodeError && ev.Op == "acquire" && ev.Node == slow.Addr() {
			told = append(told, ev)
		}
	}
	if len(told) > 1 {
		t.Errorf("node errors of the acquire on %s: %+v, want at most its call's failure", slow.Addr(), told)
	}
	for _, ev := range told {
		if strings.Contains(ev.Err.Error(), "no answer before the round ended") {
			t.Errorf("node error %+v, want the failure of the call itself", ev)
		}
	}
}

// On a Redlock with a node down, every call on that node tells a node
// error, and the quorum still obtains and releases the lock.
func TestObserveRedlockNodeDown(t *testing.T) {
	t.Parallel()
	rec := &recorder{}
	e := setupQuorum(t, 3, dlock.WithObserver(rec))
	down := e.srvs[2]
	down.Kill()
	key := testenv.Key(t)
	lock, err := e.locker.TryObtain(context.Background(), key, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if err := lock.Release(context.Background()); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, 10*time.Second, "a node error on each operation", func() bool {
		ops := map[string]bool{}
		for _, ev := range rec.of(key) {
			if ev.Type == observe.EventNodeError {
				if ev.Node != down.Addr() || ev.Err == nil || ev.Kind != "" {
					t.Errorf("node error %+v, want one of %s", ev, down.Addr())
				}
				ops[ev.Op] = true
			}
		}
		return ops["acquire"] && ops["release"]
	})
	wantTypes(t, rec.types(key), observe.EventObtain, observe.EventRelease)
	if obtain := rec.of(key)[0]; obtain.Node != "" || obtain.Result != observe.ResultObtained {
		t.Errorf("obtain event of a Redlock %+v", obtain)
	}
}

// A fair waiter is handed the lock by the release.
func TestObserveFairHandoff(t *testing.T) {
	t.Parallel()
	e, rec := setupObserved(t)
	key := testenv.Key(t)
	holder, err := e.locker.TryObtain(context.Background(), key, time.Minute, dlock.WithFair())
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan error, 1)
	go func() {
		lock, err := e.locker.Obtain(testenv.Timeout(t, 10*time.Second), key, time.Second, dlock.WithFair(), noPolling)
		if err == nil {
			err = lock.Release(context.Background())
		}
		got <- err
	}()
	waitQueued(t, e.rdb, key, 1)
	waitSubscribed(t, e, key)
	if err := holder.Release(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := <-got; err != nil {
		t.Fatal(err)
	}
	// The holder tells of its release once it has the answer, when the
	// waiter may have its lock already: the two goroutines' events mix.
	wantTypes(t, withoutReleases(rec.types(key)), observe.EventObtain, observe.EventWaitStart,
		observe.EventWaitEnd, observe.EventHandoff, observe.EventObtain)
	if obtain := rec.last(t, key, observe.EventObtain); !obtain.Handoff || obtain.Result != observe.ResultObtained {
		t.Errorf("obtain event %+v, want a handoff", obtain)
	}
}

func TestObserverOptions(t *testing.T) {
	t.Parallel()
	unused := redis.NewClient(&redis.Options{})
	defer unused.Close()
	if _, err := dlock.New(unused, dlock.WithObserver(nil)).TryObtain(context.Background(), "k", time.Second); !errors.Is(err, dlock.ErrInvalidOption) {
		t.Errorf("WithObserver(nil): %v, want ErrInvalidOption", err)
	}
	// Every Observer given is told; a plain one gets the caller's context.
	var first, second []observe.EventType
	ctx := context.WithValue(context.Background(), callMark{}, "caller's")
	var seen any
	e := setup(t,
		dlock.WithObserver(observe.ObserverFunc(func(e observe.Event) { first = append(first, e.Type); seen = e.Context.Value(callMark{}) })),
		dlock.WithObserver(observe.ObserverFunc(func(e observe.Event) { second = append(second, e.Type) })))
	lock, err := e.locker.TryObtain(ctx, testenv.Key(t), time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	_ = lock.Release(ctx)
	if want := []observe.EventType{observe.EventObtain, observe.EventRelease}; !slices.Equal(first, want) || !slices.Equal(second, want) {
		t.Errorf("observers told %v and %v, want %v each", first, second, want)
	}
	if seen != "caller's" {
		t.Errorf("event context carries %v, want the caller's", seen)
	}
}

// Count the locks obtained and those that ended, for a metric.
func ExampleWithObserver() {
	rdb := redis.NewClient(&redis.Options{Addr: redisAddr})
	defer rdb.Close()

	// Observe is called synchronously, from the caller's goroutine or the
	// Client's: it must be quick, must not block, and must be safe for
	// concurrent use.
	var obtained, held, ended atomic.Int64
	observer := observe.ObserverFunc(func(e observe.Event) {
		switch {
		case e.Type == observe.EventObtain && e.Result == observe.ResultObtained:
			obtained.Add(1)
		case e.Type == observe.EventObtain && e.Result == observe.ResultHeld:
			held.Add(1)
		case e.Ended: // a release, or a loss
			ended.Add(1)
		}
	})
	locker := dlock.New(rdb, dlock.WithObserver(observer))
	defer locker.Close()

	ctx := context.Background()
	lock, err := locker.TryObtain(ctx, "example:observer", time.Minute)
	if err != nil {
		fmt.Println(err)
		return
	}
	_, err = locker.TryObtain(ctx, "example:observer", time.Minute)
	fmt.Println(errors.Is(err, dlock.ErrNotObtained))
	_ = lock.Release(ctx)
	fmt.Println("obtained", obtained.Load(), "held by another", held.Load(), "ended", ended.Load())
	// Output:
	// true
	// obtained 1 held by another 1 ended 1
}
