package dlockgocron

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/go-co-op/gocron/v2"
	"github.com/jonboulle/clockwork"

	"github.com/dlock-go/dlock/jobs"
)

// ErrInvalid means NewLocker was given something it cannot use: a nil
// runner, a period under a millisecond, an invalid option.
var ErrInvalid = errors.New("dlockgocron: invalid argument")

// Locker is a gocron.Locker that runs each job at most once per slot of its
// period, across schedulers (see the package documentation).
type Locker struct {
	runner *jobs.Runner
	every  time.Duration
	clock  clockwork.Clock
}

var _ gocron.Locker = (*Locker)(nil)

// LockerOption configures a Locker. Pass options to NewLocker.
type LockerOption func(*lockerConfig)

type lockerConfig struct {
	clock clockwork.Clock
	err   error
}

// WithClock sets the clock the Locker reads the time of a run from, to
// find its slot: give it the scheduler's clock (gocron.WithClock). The
// default is the real clock; clock must not be nil.
func WithClock(clock clockwork.Clock) LockerOption {
	return func(c *lockerConfig) {
		if clock == nil {
			c.err = fmt.Errorf("%w: WithClock(nil)", ErrInvalid)
			return
		}
		c.clock = clock
	}
}

// NewLocker returns a Locker whose runs are slots of length every: a job
// run at time t belongs to the slot jobs.Slot(t, every). Runs of a job that
// fire into the same slot, on any scheduler, run once: records, attempts
// and retention are those of runner (jobs.WithAttempts,
// jobs.WithRetention). It returns an error wrapping ErrInvalid for a nil
// runner, a period under a millisecond, or an invalid option.
func NewLocker(runner *jobs.Runner, every time.Duration, opts ...LockerOption) (*Locker, error) {
	switch {
	case runner == nil:
		return nil, fmt.Errorf("%w: nil jobs.Runner", ErrInvalid)
	case every < time.Millisecond:
		return nil, fmt.Errorf("%w: a period of %v", ErrInvalid, every)
	}
	cfg := lockerConfig{clock: clockwork.NewRealClock()}
	for _, opt := range opts {
		if opt == nil {
			return nil, fmt.Errorf("%w: nil LockerOption", ErrInvalid)
		}
		if opt(&cfg); cfg.err != nil {
			return nil, cfg.err
		}
	}
	return &Locker{runner: runner, every: every, clock: cfg.clock}, nil
}

// Lock begins the run of the job named key in the slot of the Locker's
// clock's now. gocron skips the run when it returns an error: one wrapping
// jobs.ErrAlreadyDone, jobs.ErrRunningElsewhere or jobs.ErrNoAttemptsLeft
// when another scheduler runs or ran it, or an error of Redis.
func (l *Locker) Lock(ctx context.Context, key string) (gocron.Lock, error) {
	a, err := l.runner.Begin(ctx, key, jobs.Slot(l.clock.Now(), l.every))
	if err != nil {
		return nil, err
	}
	return slotLock{a}, nil
}

// slotLock is a run begun by Lock.
type slotLock struct{ attempt *jobs.Attempt }

// Unlock marks the slot done, rather than freeing it, so that no scheduler
// runs the job in this slot again. gocron does not tell the lock whether
// the job failed: a run that Unlock ends counts as a success.
func (s slotLock) Unlock(ctx context.Context) error {
	_, err := s.attempt.Finish(context.WithoutCancel(ctx), nil)
	return err
}
