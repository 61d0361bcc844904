package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"
	"unicode/utf8"

	"github.com/dlock-go/dlock"
	"github.com/dlock-go/dlock/cmd/dlock/internal/top"
)

// waitRedraw is how often the line that shows a wait on a terminal is
// redrawn.
const waitRedraw = 250 * time.Millisecond

// obtain obtains the lock, renewed automatically from then on: one
// attempt, and with --wait more until the wait is over. Without the lock it
// returns the exit status, having said why. When ctx is cancelled (by a
// signal) it says nothing: the caller knows.
func (r *runner) obtain(ctx context.Context, locker *dlock.Client) (*dlock.Lock, int) {
	start := time.Now()
	tryCtx, cancel := context.WithTimeout(ctx, redisTimeout)
	lock, err := r.try(tryCtx, locker)
	cancel()
	waited := false
	if errors.Is(err, dlock.ErrNotObtained) && r.wait > 0 && ctx.Err() == nil {
		lock, err = r.waitFor(ctx, locker, start.Add(r.wait))
		waited = true
	}
	switch {
	case err == nil && waited:
		r.logf("obtained the lock on %q after waiting %v (fence %s, ttl %v, renewed every %v, holder %s)",
			r.key, time.Since(start).Round(time.Millisecond), withTime(lock.Fence()), r.ttl, r.ttl/3, lock.Fingerprint())
		return lock, exitOK
	case err == nil:
		r.logf("obtained the lock on %q (fence %s, ttl %v, renewed every %v, holder %s)", r.key, withTime(lock.Fence()), r.ttl, r.ttl/3, lock.Fingerprint())
		return lock, exitOK
	case ctx.Err() != nil:
		return nil, exitFail // interrupted
	case errors.Is(err, dlock.ErrNotObtained) && waited:
		r.inform("waited %v, and the lock on %q is still %s; not running %s", r.wait, r.key, r.busyNow(ctx, locker), r.commandLine())
		return nil, r.conflictCode
	case errors.Is(err, dlock.ErrNotObtained):
		r.inform("the lock on %q is %s; not running %s", r.key, r.busyNow(ctx, locker), r.commandLine())
		return nil, r.conflictCode
	case errors.Is(err, dlock.ErrWrongType):
		r.errorf("the key %q holds another type of Redis value, or another kind of lock than %s; give --key another name", r.key, r.kindName())
		return nil, exitUsage
	case errors.Is(err, dlock.ErrLimitMismatch):
		r.errorf("%s; give every dlock run of %q the same --limit", errText(err), r.key)
		return nil, exitUsage
	}
	r.errorf("could not obtain the lock on %q at %s: %s", r.key, where(r.redis), errText(err))
	return nil, exitUnavailable
}

// obtainOptions are the options of every attempt: the lock is renewed
// automatically, and with --fair waits its turn.
func (r *runner) obtainOptions() []dlock.ObtainOption {
	opts := []dlock.ObtainOption{dlock.WithAutoRenew(true)}
	if r.fair {
		opts = append(opts, dlock.WithFair())
	}
	return opts
}

// busy says why the lock was not obtained, for messages.
func (r *runner) busy() string {
	return r.busyBy("another holder")
}

// busyBy is busy, naming the holder who.
func (r *runner) busyBy(who string) string {
	switch {
	case r.limit > 0 && r.fair:
		return fmt.Sprintf("at its limit of %d holders, or earlier --fair waiters go first", r.limit)
	case r.limit > 0:
		return fmt.Sprintf("at its limit of %d holders", r.limit)
	case r.fair:
		return "held by " + who + ", or earlier --fair waiters go first"
	}
	return "held by " + who
}

// busyNow is busy, naming the holder as Redis shows it now, if it can
// tell within a moment.
func (r *runner) busyNow(ctx context.Context, locker *dlock.Client) string {
	if ctx.Err() != nil || r.limit > 0 {
		return r.busy()
	}
	ctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	for _, key := range r.lockKeys() {
		info, err := locker.Inspect(ctx, key)
		if err != nil {
			break
		}
		if info.Held {
			if r.keys != nil {
				return r.busyBy(describeHolder(info)) + " (" + key + ")"
			}
			return r.busyBy(describeHolder(info))
		}
	}
	return r.busy()
}

// heldKey returns the first of the lock's keys that is held, or the first
// key if it cannot tell: the one a wait shows.
func (r *runner) heldKey(ctx context.Context, locker *dlock.Client) string {
	keys := r.lockKeys()
	if len(keys) > 1 {
		ctx, cancel := context.WithTimeout(ctx, time.Second)
		defer cancel()
		for _, key := range keys {
			if info, err := locker.Inspect(ctx, key); err == nil && info.Held {
				return key
			}
		}
	}
	return keys[0]
}

// lockKeys returns the keys of the lock: --key, once or several times.
func (r *runner) lockKeys() []string {
	if r.keys != nil {
		return r.keys
	}
	return []string{r.key}
}

// describeHolder names the holder of a lock, for messages: by its name and
// fingerprint, as status and list show it, and for how long it has held
// the lock if that is known.
func describeHolder(info dlock.LockInfo) string {
	who := whoHolds(info)
	if !info.Since.IsZero() {
		who += " for " + time.Since(info.Since).Round(time.Second).String()
	}
	return who
}

// waitFor waits for the lock until deadline. On a terminal it shows how long
// the holder and the wait have left, in one line redrawn in place.
func (r *runner) waitFor(ctx context.Context, locker *dlock.Client, deadline time.Time) (*dlock.Lock, error) {
	ctx, cancel := context.WithDeadline(ctx, deadline)
	defer cancel()
	switch {
	case r.tty:
		stop := showWait(ctx, locker, r.heldKey(ctx, locker), deadline, r.stderr)
		defer stop()
	case r.fair:
		r.logf("the lock on %q is %s; waiting up to %v, in arrival order", r.key, r.busy(), r.wait)
	default:
		r.logf("the lock on %q is %s; waiting up to %v", r.key, r.busy(), r.wait)
	}
	switch {
	case r.limit > 0:
		return locker.Semaphore(r.key, r.limit).Acquire(ctx, r.ttl, r.obtainOptions()...)
	case r.keys != nil:
		return locker.ObtainMulti(ctx, r.keys, r.ttl, r.obtainOptions()...)
	}
	return locker.Obtain(ctx, r.key, r.ttl, r.obtainOptions()...)
}

// try makes one attempt at the lock, or with --limit at a permit.
func (r *runner) try(ctx context.Context, locker *dlock.Client) (*dlock.Lock, error) {
	switch {
	case r.limit > 0:
		return locker.Semaphore(r.key, r.limit).TryAcquire(ctx, r.ttl, r.obtainOptions()...)
	case r.keys != nil:
		return locker.TryObtainMulti(ctx, r.keys, r.ttl, r.obtainOptions()...)
	}
	return locker.TryObtain(ctx, r.key, r.ttl, r.obtainOptions()...)
}

// kindName says what run holds, for messages.
func (r *runner) kindName() string {
	if r.limit > 0 {
		return fmt.Sprintf("a semaphore of limit %d", r.limit)
	}
	return "a lock"
}

// showWait starts redrawing, every waitRedraw until stop is called, a line
// on the terminal w that says how long the holder of key has left (as
// locker.Inspect sees it: on the server, or on the quorum) and how long
// until deadline. stop erases the line.
func showWait(ctx context.Context, locker *dlock.Client, key string, deadline time.Time, w io.Writer) (stop func()) {
	quit, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		ticker := time.NewTicker(waitRedraw)
		defer ticker.Stop()
		width := 0
		for {
			inspectCtx, cancel := context.WithTimeout(ctx, waitRedraw)
			who, holder, err := holderTTL(inspectCtx, locker, key)
			cancel()
			line := waitLine(key, who, holder, err, time.Until(deadline))
			width = max(width, utf8.RuneCountInString(line))
			fmt.Fprintf(w, "\r%-*s", width, line)
			select {
			case <-quit:
				fmt.Fprintf(w, "\r%*s\r", width, "")
				return
			case <-ticker.C:
			}
		}
	}()
	return func() {
		close(quit)
		<-done
	}
}

// holderTTL returns who holds the lock on key (a name, or "" when it
// cannot tell), and what is left of it, as a PTTL would: -2 when it is not
// held, -1 when it does not expire.
func holderTTL(ctx context.Context, locker *dlock.Client, key string) (string, time.Duration, error) {
	info, err := locker.Inspect(ctx, key)
	switch {
	case err != nil:
		return "", 0, err
	case !info.Held:
		return "", -2, nil
	case info.Holders != nil: // a semaphore's or an RW lock's: several
		return "", info.TTL, nil
	}
	return whoHolds(info), info.TTL, nil
}

// whoHolds names the holder of a lock by its name and fingerprint, as
// status and list show it; one without a name (taken by another client) as
// another holder, with its fingerprint.
func whoHolds(info dlock.LockInfo) string {
	if info.HolderName == "" {
		return "another holder [" + info.Fingerprint + "]"
	}
	return top.HolderName(info.HolderName, info.Fingerprint)
}

// waitLine is the line showWait draws: who holds the lock ("" for another
// holder), holder is the PTTL of the key, or err its error; left is what
// remains of the wait.
func waitLine(key, who string, holder time.Duration, err error, left time.Duration) string {
	if who == "" {
		who = "another holder"
	}
	var held string
	switch {
	case err != nil:
		held = "held by another holder"
	case holder == -2: // the key is gone: the lock is ours in a moment, or a rival's
		held = "free now"
	case holder < 0:
		held = "held by " + who + " with no expiry"
	default:
		held = "held by " + who + " for " + seconds(holder) + " more"
	}
	return fmt.Sprintf("dlock: waiting for the lock on %q, %s; giving up in %s", key, held, seconds(left))
}

// seconds formats d in seconds to a tenth, as "2.5s", and negative as 0.
func seconds(d time.Duration) string {
	return fmt.Sprintf("%.1fs", max(d, 0).Seconds())
}
