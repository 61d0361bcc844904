package dlock_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dlock-go/dlock"
	"github.com/dlock-go/dlock/election"
	"github.com/dlock-go/dlock/jobs"
)

// docs/packages.md shows the bodies of these two functions; packages election
// and jobs have their own examples.

func readmeLead(ctx context.Context, locker *dlock.Client, hostname string, scheduleInvoices func(context.Context, int64) error) error {
	e, err := election.New(locker, "billing-scheduler") // the seat is the lock "billing-scheduler"
	if err != nil {
		return err // election.ErrInvalid: an empty name or an invalid option
	}
	err = election.Lead(ctx, e, hostname, func(ctx context.Context) error {
		l, _ := election.FromContext(ctx)
		return scheduleInvoices(ctx, l.Term()) // ctx ends if leadership is lost; Term fences writes
	})
	return err
}

func readmeNightly(ctx context.Context, locker *dlock.Client, report func(context.Context) error) (jobs.Outcome, error) {
	runner, err := jobs.New(locker, jobs.WithAttempts(2)) // one per process
	if err != nil {
		return 0, err // jobs.ErrInvalid: an invalid option
	}
	slot := jobs.Slot(time.Now(), 24*time.Hour) // the day (UTC) it is fired in
	outcome, err := runner.Run(ctx, "nightly-report", slot, report)
	return outcome, err // jobs.Ran here; or AlreadyDone, RunningElsewhere, NoAttemptsLeft
}

// Two hosts lead in turn: the second takes over when the first's work ends.
func TestReadmeLead(t *testing.T) {
	t.Parallel()
	e := setup(t)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	var leading atomic.Int32
	var terms []int64
	var mu sync.Mutex
	var wg sync.WaitGroup
	for _, host := range []string{"a", "b"} {
		locker := newLocker(t, e.rdb)
		wg.Go(func() {
			err := readmeLead(ctx, locker, host, func(_ context.Context, term int64) error {
				if leading.Add(1) != 1 {
					t.Error("two leaders")
				}
				defer leading.Add(-1)
				mu.Lock()
				terms = append(terms, term)
				mu.Unlock()
				return nil // done: resign, and let the other lead
			})
			if err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	if len(terms) != 2 || terms[1] <= terms[0] {
		t.Errorf("terms %v, want two, increasing", terms)
	}
}

func TestReadmeNightly(t *testing.T) {
	t.Parallel()
	e := setup(t)
	failed := errors.New("database down")
	var outcomes []jobs.Outcome
	for _, err := range []error{failed, nil, nil} { // three hosts, one after the other
		outcome, got := readmeNightly(t.Context(), newLocker(t, e.rdb), func(context.Context) error { return err })
		if !errors.Is(got, err) {
			t.Errorf("Run = %v, want %v", got, err)
		}
		outcomes = append(outcomes, outcome)
	}
	want := []jobs.Outcome{jobs.RanAndFailed, jobs.Ran, jobs.AlreadyDone}
	for i := range want {
		if outcomes[i] != want[i] {
			t.Errorf("outcomes %v, want %v", outcomes, want)
			break
		}
	}
}
