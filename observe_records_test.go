package dlock_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/dlock-go/dlock"
	"github.com/dlock-go/dlock/internal/testenv"
	"github.com/dlock-go/dlock/observe"
)

// gone waits until key is no longer in Redis.
func gone(t *testing.T, e *env, key string) {
	t.Helper()
	testenv.Eventually(t, 10*time.Second, key+" expiring in Redis", func() bool {
		return e.rdb.Exists(context.Background(), key).Val() == 0
	})
}

// A record runs out as released, not lost: Err says so, and the Observer
// hears an EventRelease that ends it, marked Record, and no EventLost; also
// after the key expired in Redis. With Done called (the Lock's own timer)
// and without (the Observer's).
func TestObserveRecordRunsOut(t *testing.T) {
	t.Parallel()
	for _, done := range []bool{true, false} {
		name := "without Done"
		if done {
			name = "with Done"
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			e, rec := setupObserved(t)
			key := testenv.Key(t)
			lock, err := e.locker.TryObtain(context.Background(), key, 150*time.Millisecond, dlock.AsRecord(), dlock.WithValue("ran"))
			if err != nil {
				t.Fatal(err)
			}
			if done {
				<-lock.Done()
				if err := lock.Err(); !errors.Is(err, dlock.ErrReleased) || errors.Is(err, dlock.ErrLockLost) {
					t.Errorf("Err of a record that ran out = %v, want ErrReleased", err)
				}
			}
			end := rec.await(t, key, observe.EventRelease)
			if !end.Ended || !end.Record || end.Err != nil || end.Context != nil || end.Held <= 0 {
				t.Errorf("end of the record: %+v", end)
			}
			if obtain := rec.last(t, key, observe.EventObtain); !obtain.Record || obtain.Result != observe.ResultObtained {
				t.Errorf("obtain of the record: %+v", obtain)
			}
			gone(t, e, key)
			wantTypes(t, rec.types(key), observe.EventObtain, observe.EventRelease)
		})
	}
}

// A lock its holder keeps after the work, to expire later, is released,
// not lost: ReleaseAfter of a renewed lock and of one nothing renews (whose
// first validity runs out before the key does), and Do with WithMinHold.
func TestObserveKeptNotLost(t *testing.T) {
	t.Parallel()
	e, rec := setupObserved(t)
	ctx := context.Background()
	const keep = 300 * time.Millisecond

	renewed := testenv.Key(t) + ":renewed"
	lock := obtainRenewed(t, e.locker, renewed, 100*time.Millisecond)
	if err := lock.ReleaseAfter(ctx, keep); err != nil {
		t.Fatal(err)
	}
	plain := testenv.Key(t) + ":plain"
	short := mustObtain(t, e.locker, plain, 100*time.Millisecond)
	if err := short.ReleaseAfter(ctx, keep); err != nil {
		t.Fatal(err)
	}
	did := testenv.Key(t) + ":do"
	if err := e.locker.Do(ctx, did, 100*time.Millisecond, func(context.Context) error { return nil }, dlock.WithMinHold(keep)); err != nil {
		t.Fatal(err)
	}
	for _, key := range []string{renewed, plain, did} {
		gone(t, e, key)
	}
	for _, l := range []*dlock.Lock{lock, short} {
		if err := l.Err(); !errors.Is(err, dlock.ErrReleased) {
			t.Errorf("Err of %s after ReleaseAfter and its expiry = %v, want ErrReleased", l.Key(), err)
		}
	}
	wantTypes(t, rec.types(renewed), observe.EventObtain, observe.EventRelease)
	wantTypes(t, rec.types(plain), observe.EventObtain, observe.EventRelease)
	wantTypes(t, rec.types(did), observe.EventObtain, observe.EventRelease, observe.EventDo)
	for _, key := range []string{renewed, plain, did} {
		if release := rec.last(t, key, observe.EventRelease); !release.Ended || release.Record {
			t.Errorf("release of %s: %+v, want it to end a lock", key, release)
		}
	}
}

// A record is held as a lock is while it lasts; Refresh moves its end,
// Release ends it at once, and a record found gone is lost, marked Record.
func TestRecordHeld(t *testing.T) {
	t.Parallel()
	e, rec := setupObserved(t)
	ctx := context.Background()
	key := testenv.Key(t)
	record, err := e.locker.TryObtain(ctx, key, time.Minute, dlock.AsRecord())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.locker.TryObtain(ctx, key, time.Minute, dlock.AsRecord()); !errors.Is(err, dlock.ErrNotObtained) {
		t.Fatalf("second record on %s: %v, want ErrNotObtained", key, err)
	}
	if held := rec.last(t, key, observe.EventObtain); held.Result != observe.ResultHeld || !held.Record {
		t.Errorf("obtain that found the record held: %+v", held)
	}
	if _, err := e.locker.TryObtain(ctx, key, time.Minute); !errors.Is(err, dlock.ErrNotObtained) {
		t.Fatalf("lock on a record's key: %v, want ErrNotObtained", err)
	}
	if err := record.Refresh(ctx, 2*time.Minute); err != nil {
		t.Fatal(err)
	}
	if err := record.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if release := rec.last(t, key, observe.EventRelease); !release.Ended || !release.Record || release.Context == nil {
		t.Errorf("release of a record: %+v", release)
	}
	if err := record.Err(); !errors.Is(err, dlock.ErrReleased) {
		t.Errorf("Err after Release = %v", err)
	}

	other := testenv.Key(t) + ":deleted"
	record, err = e.locker.TryObtain(ctx, other, time.Minute, dlock.AsRecord())
	if err != nil {
		t.Fatal(err)
	}
	e.rdb.Del(ctx, other)
	if err := record.Release(ctx); !errors.Is(err, dlock.ErrNotHeld) {
		t.Fatalf("release of a deleted record: %v, want ErrNotHeld", err)
	}
	if lost := rec.last(t, other, observe.EventLost); lost.Reason != observe.LostNotHeld || !lost.Record {
		t.Errorf("loss of a deleted record: %+v", lost)
	}
}

// Nothing renews a record: AsRecord with auto-renew, and in Do, is an
// invalid option, and nothing is obtained.
func TestRecordBadOptions(t *testing.T) {
	t.Parallel()
	e, rec := setupObserved(t)
	ctx := context.Background()
	key := testenv.Key(t)
	ran := func(context.Context) error {
		t.Error("Do ran its function under a record")
		return nil
	}
	for name, err := range map[string]error{
		"TryObtain renewed": func() error {
			_, err := e.locker.TryObtain(ctx, key, time.Minute, dlock.AsRecord(), dlock.WithAutoRenew(true))
			return err
		}(),
		"Obtain renewed": func() error {
			_, err := e.locker.Obtain(ctx, key, time.Minute, dlock.WithAutoRenew(true), dlock.AsRecord())
			return err
		}(),
		"Do":              e.locker.Do(ctx, key, time.Minute, ran, dlock.AsRecord()),
		"Do not renewed":  e.locker.Do(ctx, key, time.Minute, ran, dlock.WithAutoRenew(false), dlock.AsRecord()),
		"Semaphore.Do":    e.locker.Semaphore(key+":s", 2).Do(ctx, time.Minute, ran, dlock.WithAutoRenew(false), dlock.AsRecord()),
		"RWMutex.Do":      e.locker.RWMutex(key+":rw").Do(ctx, time.Minute, ran, dlock.WithAutoRenew(false), dlock.AsRecord()),
		"Acquire renewed": acquireErr(ctx, e.locker.Semaphore(key+":s", 2), dlock.AsRecord(), dlock.WithAutoRenew(true)),
	} {
		if !errors.Is(err, dlock.ErrInvalidOption) {
			t.Errorf("%s with AsRecord: %v, want ErrInvalidOption", name, err)
		}
	}
	if n := e.rdb.DBSize(ctx).Val(); n != 0 {
		t.Errorf("%d keys in Redis after invalid calls, want none", n)
	}
	for _, ev := range rec.of(key) {
		if ev.Type == observe.EventObtain && ev.Result == observe.ResultObtained {
			t.Errorf("an invalid call obtained: %+v", ev)
		}
	}
}

func acquireErr(ctx context.Context, s *dlock.Semaphore, opts ...dlock.ObtainOption) error {
	_, err := s.TryAcquire(ctx, time.Minute, opts...)
	return err
}

// A record runs out as released while Redis does not answer: its end needs
// no round trip, and is no loss. (The client has go-redis's default
// options.)
func TestObserveRecordRedisPaused(t *testing.T) {
	t.Parallel()
	e, rec := setupObserved(t)
	key := testenv.Key(t)
	record, err := e.locker.TryObtain(context.Background(), key, 200*time.Millisecond, dlock.AsRecord())
	if err != nil {
		t.Fatal(err)
	}
	e.srv.Pause()
	<-record.Done()
	end := rec.await(t, key, observe.EventRelease)
	e.srv.Resume()
	if err := record.Err(); !errors.Is(err, dlock.ErrReleased) {
		t.Errorf("Err of a record run out while Redis was paused = %v, want ErrReleased", err)
	}
	if !end.Ended || !end.Record {
		t.Errorf("end of the record: %+v", end)
	}
	wantTypes(t, rec.types(key), observe.EventObtain, observe.EventRelease)
}

// Leave a note that the nightly export ran, kept for a day: a record, which
// metrics count apart from locks, and which ends as released when its ttl
// runs out.
func ExampleAsRecord() {
	rdb := redis.NewClient(&redis.Options{Addr: redisAddr})
	defer rdb.Close()
	locker := dlock.New(rdb)
	defer locker.Close()
	ctx := context.Background()

	const note = "example:export:2026-11-26"
	if _, err := locker.TryObtain(ctx, note, 24*time.Hour, dlock.AsRecord(), dlock.WithValue("rows=1204")); err != nil {
		fmt.Println(err)
		return
	}
	// A second host finds the note, and does not export again.
	_, err := locker.TryObtain(ctx, note, 24*time.Hour, dlock.AsRecord())
	fmt.Println("exported already:", errors.Is(err, dlock.ErrNotObtained))
	info, err := locker.Inspect(ctx, note)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("note:", info.Value())

	_, _ = locker.ForceRelease(ctx, note) // the example cleans up after itself
	// Output:
	// exported already: true
	// note: rows=1204
}
