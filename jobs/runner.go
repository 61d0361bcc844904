package jobs

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/dlock-go/dlock"
	"github.com/dlock-go/dlock/internal/door"
	"github.com/dlock-go/dlock/observe"
)

// Runner runs jobs at most once per schedule slot across the hosts that
// share its Redis deployment. It is safe for concurrent use; make one per
// process.
type Runner struct {
	locker *dlock.Client
	cfg    config
	obs    observe.PackageObserver // locker's; nil without one
}

// New returns a Runner that keeps its locks and records on the Redis
// deployment of locker (made by dlock.New or dlock.NewRedlock).
//
// The Runner tells the observers of locker (dlock.WithObserver) that are
// observe.PackageObservers how each run ended (observe.OpRun): the
// Prometheus and OpenTelemetry modules count them by job and outcome.
//
// New does not talk to Redis. A nil locker or an invalid option is no
// panic: New returns an error wrapping ErrInvalid, and no Runner.
func New(locker *dlock.Client, opts ...Option) (*Runner, error) {
	if locker == nil {
		return nil, fmt.Errorf("%w: nil dlock.Client", ErrInvalid)
	}
	cfg, err := newConfig(opts)
	if err != nil {
		return nil, err
	}
	return &Runner{locker: locker, cfg: cfg, obs: door.PackageObserver(locker)}, nil
}

// errNotNew is the error of every call of a Runner that New did not make.
var errNotNew = fmt.Errorf("%w: a Runner not made by New", ErrInvalid)

// Outcome is what Run did.
type Outcome int

// The outcomes of Run.
const (
	Ran              Outcome = iota + 1 // fn ran here and returned nil: the slot is done
	RanAndFailed                        // fn ran here and failed; Run returns why
	AlreadyDone                         // the slot was done already: fn did not run
	RunningElsewhere                    // another host runs the job in this slot now: fn did not run
	NoAttemptsLeft                      // the slot's attempts were all made, and failed: fn did not run
)

var outcomeNames = [...]string{
	Ran: "ran", RanAndFailed: "failed", AlreadyDone: "already done",
	RunningElsewhere: "running elsewhere", NoAttemptsLeft: "no attempts left",
}

// String names the outcome, as logs and the CLI show it.
func (o Outcome) String() string {
	if o < Ran || int(o) >= len(outcomeNames) {
		return "Outcome(" + strconv.Itoa(int(o)) + ")"
	}
	return outcomeNames[o]
}

// Run runs fn for the job named name (see Names in the package doc) in
// the schedule slot slot (see Slot), unless the slot is done or taken: of
// all the hosts that call Run with the same name and slot, one runs fn,
// and once it succeeded no other does, however late it calls, for the
// retention (WithRetention). A failed run lets another call of the slot
// try again, up to WithAttempts attempts.
//
// fn's context is cancelled when ctx is, and when the lease of the run is
// lost (with a cause wrapping dlock.ErrLockLost): fn should stop then. A
// run that fails (fn returns an error or panics, or the lease is lost) is
// recorded as failed; a panic goes on up once it is recorded.
//
// Run returns Ran or RanAndFailed (with fn's error, or the loss) when fn
// ran, and AlreadyDone, RunningElsewhere or NoAttemptsLeft with a nil
// error when it did not. An error of Redis before fn ran comes with
// outcome 0; one while recording the end of a run comes with the
// run's outcome: the slot may then be run again.
func (r *Runner) Run(ctx context.Context, name string, slot time.Time, fn func(ctx context.Context) error) (Outcome, error) {
	if fn == nil {
		return 0, fmt.Errorf("%w: nil function", ErrInvalid)
	}
	a, err := r.Begin(ctx, name, slot)
	switch {
	case errors.Is(err, ErrAlreadyDone):
		return AlreadyDone, nil
	case errors.Is(err, ErrRunningElsewhere):
		return RunningElsewhere, nil
	case errors.Is(err, ErrNoAttemptsLeft):
		return NoAttemptsLeft, nil
	case err != nil:
		return 0, err
	}
	work, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	stop := context.AfterFunc(a.Context(), func() { cancel(context.Cause(a.Context())) })
	defer stop()
	defer func() {
		if p := recover(); p != nil {
			_, _ = a.Finish(context.WithoutCancel(ctx), fmt.Errorf("panic: %v", p))
			panic(p)
		}
	}()
	err = fn(work)
	return a.Finish(context.WithoutCancel(ctx), err)
}

// check validates a job name, and the Runner.
func (r *Runner) check(name string) error {
	switch {
	case r == nil || r.locker == nil:
		return errNotNew
	case name == "":
		return fmt.Errorf("%w: empty job name", ErrInvalid)
	case !utf8.ValidString(name):
		return fmt.Errorf("%w: job name %s is not valid UTF-8", ErrInvalid, strconv.Quote(name))
	case jsonLen(name) > maxNameLen:
		return fmt.Errorf("%w: a job name of %d bytes in its records (JSON), over %d", ErrInvalid, jsonLen(name), maxNameLen)
	}
	return checkRecordLen(name, r.cfg.host, r.cfg.attempts)
}

// checkSlot validates a slot.
func checkSlot(slot time.Time) error {
	switch y := slot.UTC().Year(); {
	case slot.IsZero():
		return fmt.Errorf("%w: zero slot (Slot returns it for a period that is not positive)", ErrInvalid)
	case y < 1 || y > 9999: // the records' times are RFC 3339
		return fmt.Errorf("%w: slot %v, outside the years 1 to 9999", ErrInvalid, slot)
	}
	return nil
}

// keyPrefix starts the keys of every job: keyPrefix, the job's name, "@",
// the slot, "/" and the kind of record (see record.go).
const keyPrefix = "dlock:job:"

func slotKey(name string, slot time.Time, kind string, attempt int) string {
	key := keyPrefix + name + "@" + slot.UTC().Format(time.RFC3339Nano) + "/" + kind
	if attempt > 0 {
		key += "/" + strconv.Itoa(attempt)
	}
	return key
}

// observeRun tells the Runner's observer, if it has one, that a run of the
// job name ended with outcome, after took.
func (r *Runner) observeRun(name, outcome string, took time.Duration) {
	if r.obs != nil {
		r.obs.ObservePackage(observe.PackageEvent{Package: observe.PackageJobs, Op: observe.OpRun, Outcome: outcome, Name: name, Duration: took})
	}
}
