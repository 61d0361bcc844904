package jobs_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/dlock-go/dlock"
	"github.com/dlock-go/dlock/internal/testenv"
	"github.com/dlock-go/dlock/internal/testenv/lockenv"
	"github.com/dlock-go/dlock/jobs"
	"github.com/dlock-go/dlock/redistest"
)

// readmeNightly runs the code that docs/packages.md shows (its body); the package's
// own examples are in example_test.go.
func readmeNightly(ctx context.Context, locker *dlock.Client, report func(context.Context) error) (jobs.Outcome, error) {
	runner, err := jobs.New(locker, jobs.WithAttempts(2)) // one per process
	if err != nil {
		return 0, err // jobs.ErrInvalid: an invalid option
	}
	slot := jobs.Slot(time.Now(), 24*time.Hour) // the day (UTC) it is fired in
	outcome, err := runner.Run(ctx, "nightly-report", slot, report)
	return outcome, err // jobs.Ran here; or AlreadyDone, RunningElsewhere, NoAttemptsLeft
}

func TestReadmeNightly(t *testing.T) {
	t.Parallel()
	rdb := redistest.NewServer(t).Client() // a server of its own: the job's name is the docs'
	failed := errors.New("database down")
	var outcomes []jobs.Outcome
	for _, err := range []error{failed, nil, nil} { // three hosts, one after the other
		outcome, got := readmeNightly(t.Context(), lockenv.Locker(t, rdb), func(context.Context) error { return err })
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

// docCode is the code of the package's doc (doc.go), as written, so that
// it compiles; TestDocCodeIsTested checks that the two agree.
func docCode(ctx context.Context, locker *dlock.Client, report func(context.Context) error) error {
	runner, err := jobs.New(locker) // one per process
	if err != nil {
		return err // an invalid option: jobs.ErrInvalid
	}
	slot := jobs.Slot(time.Now(), 24*time.Hour)
	outcome, err := runner.Run(ctx, "nightly-report", slot, report)
	// outcome: jobs.Ran here, or AlreadyDone, RunningElsewhere, ...
	_ = outcome
	return err
}

func TestDocCodeIsTested(t *testing.T) {
	_ = docCode
	testenv.DocCodeIsTested(t, 1)
}
