package jobs

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"sync"
	"time"

	"github.com/dlock-go/dlock"
	"github.com/dlock-go/dlock/observe"
)

// Attempt is a run of a job in a slot, begun by Begin and ended by Finish:
// the pieces Run is made of, for schedulers that call a lock before the
// job and an unlock after it (see the gocron module). It is safe for
// concurrent use.
type Attempt struct {
	r      *Runner
	lease  *dlock.Lock // of the slot's run
	record Record

	mu       sync.Mutex
	ctx      context.Context // made by the first Context
	cancel   context.CancelCauseFunc
	finished bool
}

// Begin begins a run of the job named name in slot, as Run does before it
// calls its function, and returns it; the caller runs the job, then calls
// Finish. When the run cannot begin here, the error wraps ErrAlreadyDone,
// ErrRunningElsewhere or ErrNoAttemptsLeft; or it is an error of Redis, or
// ErrInvalid.
func (r *Runner) Begin(ctx context.Context, name string, slot time.Time) (*Attempt, error) {
	a, err := r.begin(ctx, name, slot)
	if err != nil && r != nil && r.obs != nil {
		if outcome := beginOutcome(err); outcome != "" {
			r.observeRun(name, outcome, 0)
		}
	}
	return a, err
}

// beginOutcome is the outcome (observe.OpRun) of a Begin that returned
// err, or "" for bad input, which is no run.
func beginOutcome(err error) string {
	switch {
	case errors.Is(err, ErrAlreadyDone):
		return observe.OutcomeAlreadyDone
	case errors.Is(err, ErrRunningElsewhere):
		return observe.OutcomeRunningElsewhere
	case errors.Is(err, ErrNoAttemptsLeft):
		return observe.OutcomeNoAttemptsLeft
	case errors.Is(err, ErrInvalid):
		return ""
	}
	return observe.OutcomeError
}

func (r *Runner) begin(ctx context.Context, name string, slot time.Time) (*Attempt, error) {
	if err := r.check(name); err != nil {
		return nil, err
	}
	if err := checkSlot(slot); err != nil {
		return nil, err
	}
	slot = slot.UTC()
	quoted := strconv.Quote(name) + " in slot " + slot.Format(time.RFC3339Nano)
	if done, err := r.done(ctx, name, slot); err != nil || done {
		return nil, r.wrap(quoted, err, ErrAlreadyDone)
	}
	rec := Record{Job: name, Slot: slot, Host: r.cfg.host, Start: time.Now().UTC(), Status: Running}
	lease, err := r.lease(ctx, slotKey(name, slot, kindRun, 0), rec)
	if errors.Is(err, dlock.ErrNotObtained) {
		return nil, fmt.Errorf("%w: %s", ErrRunningElsewhere, quoted)
	}
	if err != nil {
		return nil, fmt.Errorf("jobs: %s: %w", quoted, err)
	}
	// The slot may have been done by a host that let go of the lease
	// between the look above and the TryObtain: look again.
	if done, err := r.done(ctx, name, slot); err != nil || done {
		r.letGo(ctx, lease)
		return nil, r.wrap(quoted, err, ErrAlreadyDone)
	}
	for rec.Attempt = 1; rec.Attempt <= r.cfg.attempts; rec.Attempt++ {
		_, err := r.locker.TryObtain(ctx, slotKey(name, slot, kindAttempt, rec.Attempt), r.cfg.retention,
			dlock.AsRecord(), dlock.WithValue(rec.encode(kindAttempt)))
		if err == nil {
			return &Attempt{r: r, lease: lease, record: rec}, nil
		}
		if !errors.Is(err, dlock.ErrNotObtained) {
			r.letGo(ctx, lease)
			return nil, fmt.Errorf("jobs: %s: %w", quoted, err)
		}
	}
	r.letGo(ctx, lease)
	return nil, fmt.Errorf("%w: %s: %d attempts made", ErrNoAttemptsLeft, quoted, r.cfg.attempts)
}

// lease takes the lease of a run of the slot, making one attempt, unless
// nobody holds it after all: on a Redlock, hosts that try at once can split
// the nodes' votes so that none gets a quorum, and then each would leave
// the slot to the others. Such a tie is tried again, after a random pause
// that sets the rivals apart, a few times.
func (r *Runner) lease(ctx context.Context, key string, rec Record) (*dlock.Lock, error) {
	for tries := 1; ; tries++ {
		lease, err := r.locker.TryObtain(ctx, key, r.cfg.ttl,
			dlock.WithAutoRenew(true), dlock.WithValue(rec.encode(kindRun)))
		if !errors.Is(err, dlock.ErrNotObtained) || tries == maxTies {
			return lease, err
		}
		info, ierr := r.locker.Inspect(ctx, key)
		if ierr != nil || info.Held {
			return nil, err // held elsewhere (or unknown): as TryObtain said
		}
		pause := time.Duration(1+rand.IntN(20)) * time.Millisecond
		select {
		case <-ctx.Done():
			return nil, err
		case <-time.After(pause):
		}
	}
}

// maxTies is how many times lease tries when nobody holds the lease.
const maxTies = 5

// done reports whether the slot has a done record.
func (r *Runner) done(ctx context.Context, name string, slot time.Time) (bool, error) {
	info, err := r.locker.Inspect(ctx, slotKey(name, slot, kindDone, 0))
	return info.Held, err
}

// wrap returns the error of a look at the done record: Redis's, or else
// the sentinel.
func (r *Runner) wrap(quoted string, err, sentinel error) error {
	if err != nil {
		return fmt.Errorf("jobs: %s: %w", quoted, err)
	}
	return fmt.Errorf("%w: %s", sentinel, quoted)
}

// letGo releases a lease, even if ctx has ended, within a lease.
func (r *Runner) letGo(ctx context.Context, lease *dlock.Lock) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), r.cfg.ttl)
	defer cancel()
	_ = lease.Release(ctx) // else it expires
}

// Number returns the number of the attempt in its slot, from 1.
func (a *Attempt) Number() int { return a.record.Attempt }

// Context returns a context that is cancelled when the lease of the run is
// lost, with a cause wrapping dlock.ErrLockLost (see context.Cause), or
// when Finish ends it: the job should stop then.
func (a *Attempt) Context() context.Context {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.ctx == nil {
		a.ctx, a.cancel = context.WithCancelCause(context.Background())
		go func() {
			// Ends with the lease: released by Finish, or lost.
			<-a.lease.Done()
			a.cancel(a.lease.Err())
		}()
	}
	return a.ctx
}

// Finish ends the attempt with the outcome of the job, err (nil if it
// succeeded), and returns what Run would: Ran, or RanAndFailed and why.
// A success leaves the slot's done record, so that no host runs the job in
// the slot again; a failure leaves a record of it, so that another host may
// try again (WithAttempts). A lease lost while the job ran makes it a
// failure. Then Finish lets go of the lease. An error of Redis while it
// records comes with the outcome, and a Finish of an attempt that was
// finished already returns an error wrapping ErrInvalid.
func (a *Attempt) Finish(ctx context.Context, err error) (Outcome, error) {
	a.mu.Lock()
	finished := a.finished
	a.finished = true
	a.mu.Unlock()
	if finished {
		return 0, fmt.Errorf("%w: attempt %d of %s finished twice", ErrInvalid, a.record.Attempt, strconv.Quote(a.record.Job))
	}
	defer a.r.letGo(ctx, a.lease)
	if lost := a.lease.Err(); lost != nil {
		err = errors.Join(err, lost)
	}
	rec, kind, outcome := a.record, kindDone, Ran
	rec.End, rec.Status = time.Now().UTC(), Succeeded
	if err != nil {
		kind, outcome = kindFailed, RanAndFailed
		rec.Status, rec.Error = Failed, truncate(err.Error(), maxErrorLen)
	}
	attempt := rec.Attempt
	if kind == kindDone {
		attempt = 0 // one done record per slot, whichever attempt made it
	}
	if a.r.obs != nil {
		observed := observe.OutcomeRan
		if outcome == RanAndFailed {
			observed = observe.OutcomeFailed
		}
		a.r.observeRun(rec.Job, observed, rec.End.Sub(rec.Start))
	}
	_, recordErr := a.r.locker.TryObtain(ctx, slotKey(rec.Job, rec.Slot, kind, attempt), a.r.cfg.retention,
		dlock.AsRecord(), dlock.WithValue(rec.encode(kind)))
	if recordErr != nil && !errors.Is(recordErr, dlock.ErrNotObtained) {
		recordErr = fmt.Errorf("jobs: record the end of %s in slot %s: %w", strconv.Quote(rec.Job), rec.Slot.Format(time.RFC3339Nano), recordErr)
		return outcome, errors.Join(err, recordErr)
	}
	return outcome, err
}
