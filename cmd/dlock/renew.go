package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/dlock-go/dlock"
)

// A renewer keeps the lock of the run verb alive while its command runs: it
// refreshes the lock every third of its ttl, each refresh given a third of
// the ttl to answer. A refresh that finds the lock not ours means the lock
// is lost now; one that fails otherwise is retried every tenth of the ttl
// until the lock's validity (Lock.Until) has passed, and then the lock is
// lost too.
//
// It stands in for the library's auto-renew, which a later version adds
// (Lock.Done) and which will replace it.
type renewer struct {
	lock   *dlock.Lock
	ttl    time.Duration
	logf   func(format string, args ...any)
	lost   chan struct{} // closed when the lock is lost; err says why
	err    error
	cancel context.CancelFunc
	done   chan struct{} // closed when the goroutine has returned
}

// startRenewer starts renewing lock for ttl. logf reports each renewal and
// each failed one. The caller must call Stop.
func startRenewer(ctx context.Context, lock *dlock.Lock, ttl time.Duration, logf func(format string, args ...any)) *renewer {
	ctx, cancel := context.WithCancel(ctx)
	r := &renewer{
		lock: lock, ttl: ttl, logf: logf,
		lost: make(chan struct{}), cancel: cancel, done: make(chan struct{}),
	}
	go r.run(ctx)
	return r
}

// Lost returns a channel that is closed when the lock is lost.
func (r *renewer) Lost() <-chan struct{} { return r.lost }

// Err returns why the lock was lost, or nil if it was not. Call it once Lost
// is closed, or after Stop.
func (r *renewer) Err() error {
	select {
	case <-r.lost:
		return r.err
	default:
		return nil
	}
}

// Stop stops renewing, cancelling a refresh under way, and waits until the
// renewer's goroutine has returned.
func (r *renewer) Stop() {
	r.cancel()
	<-r.done
}

func (r *renewer) run(ctx context.Context) {
	defer close(r.done)
	every, retry := r.ttl/3, r.ttl/10
	timer := time.NewTimer(every)
	defer timer.Stop()
	var failed error // the last refresh's error, if it failed
	for {
		select {
		case <-ctx.Done():
			return
		case <-timer.C:
		}
		left := time.Until(r.lock.Until())
		if left <= 0 {
			if failed == nil {
				failed = errors.New("no time to renew it") // the ttl is too short for the round trip
			}
			r.lose(fmt.Errorf("it expired, as renewing it failed: %s", errText(failed)))
			return
		}
		refreshCtx, cancel := context.WithTimeout(ctx, min(every, left))
		err := r.lock.Refresh(refreshCtx, r.ttl)
		cancel()
		switch {
		case ctx.Err() != nil: // stopped
			return
		case err == nil:
			failed = nil
			r.logf("renewed the lock on %q for %v", r.lock.Key(), r.ttl)
			timer.Reset(every)
		case errors.Is(err, dlock.ErrNotHeld):
			r.lose(err)
			return
		default:
			failed = err
			r.logf("could not renew the lock on %q: %s; trying again", r.lock.Key(), errText(err))
			timer.Reset(min(retry, max(0, time.Until(r.lock.Until()))))
		}
	}
}

func (r *renewer) lose(err error) {
	r.err = err
	close(r.lost)
}
