package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"time"

	"github.com/dlock-go/dlock"
	"github.com/dlock-go/dlock/jobs"
)

// onceRetention is how long the records of a --once-per slot are kept: a
// day (the jobs default), or two periods if that is longer, so that a host
// that fires late in the period, or whose clock is late, still finds the
// done record.
func onceRetention(period time.Duration) time.Duration {
	return max(jobs.DefaultRetention, 2*period)
}

// runOnce is the run verb with --once-per: it begins an attempt of the job
// named by the key in the current slot (jobs.Runner), runs the command
// under the attempt's lease as runLocked runs it under a lock, and records
// its end. before is cancelled by the first signal until interrupted is
// called, which returns that signal.
func (r *runner) runOnce(ctx, before context.Context, interrupted func() os.Signal, locker *dlock.Client, sigs <-chan os.Signal) int {
	runner, err := jobs.New(locker, jobs.WithTTL(r.ttl), jobs.WithRetention(onceRetention(r.oncePer)))
	if err != nil { // a ttl or retention the flags let through
		r.errorf("%s", errText(err))
		return exitUsage
	}
	slot := jobs.Slot(time.Now(), r.oncePer) // the period fired in; a positive period (checked with the flags)
	slotText := slot.Format(time.RFC3339)
	beginCtx, cancel := context.WithTimeout(before, redisTimeout)
	attempt, err := runner.Begin(beginCtx, r.key, slot)
	cancel()
	if sig := interrupted(); sig != nil {
		if attempt != nil {
			r.finish(ctx, attempt, fmt.Errorf("dlock got %s before the command started", signalName(sig)))
		}
		r.inform("got %s before %s started; not running it", signalName(sig), r.commandLine())
		return signalStatus(sig)
	}
	if code, skip := r.slotTaken(err, slotText); skip {
		return code
	}
	r.leaseDesc = fmt.Sprintf("the lease of %q in slot %s", r.key, slotText)
	r.logf("began attempt %d of %q in slot %s", attempt.Number(), r.key, slotText)
	c, err := r.start([]string{"DLOCK_KEY=" + r.key, "DLOCK_SLOT=" + slotText})
	if err != nil {
		r.errorf("cannot run %s: %v", r.commandLine(), err)
		r.finish(ctx, attempt, err)
		return startFailedStatus(err)
	}
	lease := attemptLease{attempt.Context()}
	status, lost := r.supervise(c, lease, sigs)
	var failure error
	if status != exitOK {
		failure = fmt.Errorf("%s exited with status %d", r.commandLine(), status)
	}
	if !lost && lease.Err() != nil { // lost as the command exited
		r.errorf("lost %s before %s ended: %s", r.leaseName(), r.commandLine(), lostReason(lease.Err()))
	}
	r.finish(ctx, attempt, failure)
	if lost {
		return exitLockLost
	}
	return status
}

// slotTaken says why an attempt did not begin, and returns the exit status.
// skip is false when err is nil: the attempt began.
func (r *runner) slotTaken(err error, slot string) (code int, skip bool) {
	switch {
	case err == nil:
		return exitOK, false
	case errors.Is(err, jobs.ErrAlreadyDone):
		r.inform("%q ran in slot %s already; not running %s", r.key, slot, r.commandLine())
		return r.slotCode, true
	case errors.Is(err, jobs.ErrRunningElsewhere):
		r.inform("%q runs elsewhere in slot %s; not running %s", r.key, slot, r.commandLine())
		return r.slotCode, true
	case errors.Is(err, jobs.ErrNoAttemptsLeft):
		r.inform("%q failed in slot %s, and is not tried again in it; not running %s", r.key, slot, r.commandLine())
		return r.slotCode, true
	case errors.Is(err, dlock.ErrWrongType):
		r.errorf("a key of slot %s of %q holds another type of Redis value; give --key another name", slot, r.key)
		return exitUsage, true
	case errors.Is(err, jobs.ErrInvalid):
		r.errorf("%s", errText(err))
		return exitUsage, true
	}
	r.errorf("could not begin %q in slot %s at %s: %s", r.key, slot, where(r.redis), errText(err))
	return exitUnavailable, true
}

// finish records the end of the attempt: failure is nil if the command
// succeeded. It says so if the record could not be written. It waits for
// Redis as long as the lease could still be held (--ttl), and at least
// redisTimeout: go-redis sends a write whose reply is late again, and a
// write given up on is undone, which would leave the slot to run again.
func (r *runner) finish(ctx context.Context, attempt *jobs.Attempt, failure error) {
	ctx, cancel := context.WithTimeout(ctx, max(redisTimeout, r.ttl))
	defer cancel()
	outcome, err := attempt.Finish(ctx, failure)
	switch {
	case outcome == jobs.Ran && err != nil:
		r.errorf("could not record that %q is done: %s; another host may run it again in this slot", r.key, errText(err))
	case outcome == jobs.Ran:
		r.logf("recorded attempt %d of %q as done", attempt.Number(), r.key)
	case err != nil:
		r.logf("recorded attempt %d of %q as failed: %s", attempt.Number(), r.key, strconv.Quote(errText(err)))
	}
}

// attemptLease is the lease of a job's attempt, as supervise watches it.
type attemptLease struct{ ctx context.Context }

func (a attemptLease) Done() <-chan struct{} { return a.ctx.Done() }
func (a attemptLease) Err() error {
	if a.ctx.Err() == nil {
		return nil
	}
	return context.Cause(a.ctx)
}
