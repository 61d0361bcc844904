package dlockgocron_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/go-co-op/gocron/v2"

	"github.com/dlock-go/dlock"
	dlockgocron "github.com/dlock-go/dlock/gocron"
	"github.com/dlock-go/dlock/jobs"
)

// told wraps a Locker to tell the test when a firing is over: when Lock
// refused it, or when Unlock marked it done.
type told struct {
	gocron.Locker
	events chan<- string
}

func (l told) Lock(ctx context.Context, key string) (gocron.Lock, error) {
	lock, err := l.Locker.Lock(ctx, key)
	if err != nil {
		l.events <- "skipped"
		return nil, err
	}
	return toldLock{lock, l.events}, nil
}

type toldLock struct {
	gocron.Lock
	events chan<- string
}

func (l toldLock) Unlock(ctx context.Context) error {
	defer func() { l.events <- "ran" }()
	return l.Lock.Unlock(ctx)
}

// Three schedulers with skewed clocks run a job every minute: each minute
// runs once, on the scheduler whose clock is early; the others, later,
// find the slot done. (With a lock deleted on Unlock, the later ones would
// run it again.)
func TestLockerRunsEachSlotOnce(t *testing.T) {
	t.Parallel()
	job := testName(t)
	runs := &ledger{runs: map[time.Time][]string{}}
	hosts := startHosts(t, job, runs, func(h *host) []gocron.SchedulerOption {
		locker, err := dlockgocron.NewLocker(newRunner(t, jobs.WithHost(h.name)), every, dlockgocron.WithClock(h.clock))
		if err != nil {
			t.Fatal(err)
		}
		return []gocron.SchedulerOption{gocron.WithDistributedLocker(told{locker, h.events})}
	})
	const slots = 5
	fire(t, hosts, slots, nil)
	runs.check(t, slots)
	records, err := newRunner(t).History(t.Context(), job)
	if err != nil || len(records) != slots {
		t.Fatalf("History = %+v, %v", records, err)
	}
	for _, r := range records {
		if r.Status != jobs.Succeeded || r.Host != "host-0" {
			t.Errorf("record %+v, want a success of host-0, whose clock is early", r)
		}
	}
}

func TestNewLockerInvalid(t *testing.T) {
	t.Parallel()
	runner := newRunner(t)
	for what, err := range map[string]error{
		"nil runner":  second(dlockgocron.NewLocker(nil, time.Minute)),
		"zero period": second(dlockgocron.NewLocker(runner, 0)),
		"nil clock":   second(dlockgocron.NewLocker(runner, time.Minute, dlockgocron.WithClock(nil))),
		"nil option":  second(dlockgocron.NewLocker(runner, time.Minute, nil)),
	} {
		if !errors.Is(err, dlockgocron.ErrInvalid) {
			t.Errorf("%s: %v, want ErrInvalid", what, err)
		}
	}
}

func second[T any](_ T, err error) error { return err }

// naiveLocker is what gocron lockers usually do: a lock named after the
// job, deleted on Unlock.
type naiveLocker struct{ locker *dlock.Client }

func (n naiveLocker) Lock(ctx context.Context, key string) (gocron.Lock, error) {
	lock, err := n.locker.TryObtain(ctx, key, time.Minute)
	if err != nil {
		return nil, err
	}
	return naiveLock{lock}, nil
}

type naiveLock struct{ lock *dlock.Lock }

func (n naiveLock) Unlock(ctx context.Context) error { return n.lock.Release(ctx) }

// The same schedulers with the naive lock run each minute three times: a
// fast job is over before the late clocks fire.
func TestNaiveLockerRunsSlotsAgain(t *testing.T) {
	t.Parallel()
	runs := &ledger{runs: map[time.Time][]string{}}
	hosts := startHosts(t, testName(t), runs, func(h *host) []gocron.SchedulerOption {
		return []gocron.SchedulerOption{gocron.WithDistributedLocker(told{naiveLocker{newLocker(t)}, h.events})}
	})
	fire(t, hosts, 2, nil)
	for slot, on := range runs.runs {
		if len(on) != 3 {
			t.Errorf("slot %s ran on %v: the naive lock should have let all three run it", slot.Format(time.TimeOnly), on)
		}
	}
}
