package idempotency

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"time"

	"github.com/dlock-go/dlock"
	"github.com/dlock-go/dlock/internal/ctxerr"
	"github.com/dlock-go/dlock/internal/door"
	"github.com/dlock-go/dlock/observe"
)

// Do runs fn once for key, stores its result, and returns it; later calls
// with the same key get the stored result with replayed true, without
// running fn, for the retention (see WithRetention).
//
// The first caller runs fn while holding a lock on the key, renewed as long
// as fn runs. fn's context is cancelled when ctx is, and also if the lock
// is lost (its cause then wraps dlock.ErrLockLost): fn should stop then,
// since another caller may run fn next. The result is stored only while the
// caller still holds the lock, so a caller that lost it can never overwrite
// another's result; it gets fn's result and an error wrapping ErrNotStored.
//
// A caller that finds fn running for the key elsewhere waits for it, woken
// when it finishes, for at most WithWait, and then returns its stored
// result, or runs fn itself if the first call stored nothing. With
// WithWait(0), or when the wait is over, it returns ErrInProgress.
//
// fingerprint identifies what the caller asks for, such as the request
// body: a call with the key of an earlier call and another fingerprint gets
// ErrMismatch. Only its SHA-256 digest is stored; nil is a fingerprint like
// any other.
//
// An error from fn is returned and not stored, and the key is free again:
// the next call runs fn. An error marked with Final is stored, and later
// calls return it as a *FinalError. A result larger than WithMaxResult is
// returned with an error wrapping ErrTooLarge, and not stored. If fn panics,
// the key is freed and the panic goes on.
//
// Errors from Redis before fn ran wrap ErrUnavailable; after it, an error
// wraps ErrNotStored if the result was not stored, or ErrMaybeStored if
// Redis did not say whether it was. A context that ends before fn runs
// makes Do return its error. Once fn has returned, its outcome is stored
// and the lock released even if ctx has ended, each waiting at most
// WithLockTTL for Redis.
func (s *Store) Do(ctx context.Context, key string, fingerprint []byte, fn func(ctx context.Context) ([]byte, error)) (result []byte, replayed bool, err error) {
	if err := s.usable(); err != nil {
		return nil, false, err
	}
	c := call{s: s, key: key, digest: sha256.Sum256(fingerprint), wait: s.cfg.wait}
	o := c.do(ctx, fn)
	return o.result, o.replayed, o.err
}

// call is one call of Do, or one request through the Middleware.
type call struct {
	s      *Store
	key    string
	digest [sha256.Size]byte
	wait   time.Duration // for a call running fn elsewhere; 0 means none
}

// outcome is what a call got.
type outcome struct {
	result   []byte
	replayed bool
	ran      bool // fn was called
	err      error
}

// do runs the call, and tells the Store's observer, if it has one, how it
// ended.
func (c call) do(ctx context.Context, fn func(context.Context) ([]byte, error)) outcome {
	o := c.attempt(ctx, fn)
	if c.s != nil && c.s.obs != nil {
		if name := o.observed(); name != "" {
			c.s.obs.ObservePackage(observe.PackageEvent{Package: observe.PackageIdempotency, Op: observe.OpCall, Outcome: name, Key: c.key})
		}
	}
	return o
}

// observed names o for observe.OpCall, or "" for a call refused for bad
// input, which tells nothing.
func (o outcome) observed() string {
	switch {
	case o.replayed:
		return observe.OutcomeReplayed
	case o.ran && errors.Is(o.err, dlock.ErrLockLost):
		return observe.OutcomeInterrupted
	case o.ran && (errors.Is(o.err, ErrNotStored) || errors.Is(o.err, ErrMaybeStored) || errors.Is(o.err, ErrTooLarge)):
		return observe.OutcomeNotStored
	case o.ran && (o.err == nil || isFinal(o.err)):
		return observe.OutcomeStored
	case o.ran:
		return observe.OutcomeFailed
	case errors.Is(o.err, ErrInProgress):
		return observe.OutcomeInProgress
	case errors.Is(o.err, ErrMismatch):
		return observe.OutcomeMismatch
	case errors.Is(o.err, ErrInvalidKey), errors.Is(o.err, ErrInvalidOption):
		return ""
	}
	return observe.OutcomeError
}

// attempt is the work of do.
func (c call) attempt(ctx context.Context, fn func(context.Context) ([]byte, error)) outcome {
	s := c.s
	if err := s.usable(); err != nil {
		return outcome{err: err}
	}
	if c.key == "" {
		return outcome{err: fmt.Errorf("%w: empty key", ErrInvalidKey)}
	}
	if fn == nil {
		return outcome{err: fmt.Errorf("%w: Do with a nil function", ErrInvalidOption)}
	}
	k := s.keysOf(c.key)
	// One round trip finds a stored outcome or takes the key's lock (the
	// lock's guard is the record key), and a first call's release stores
	// its outcome: two round trips beyond fn.
	lock, err := c.obtain(ctx, k)
	var guard *door.GuardError
	if errors.As(err, &guard) {
		rec, err := decodeRecord([]byte(guard.Value))
		return c.replay(rec, err)
	}
	if err != nil {
		return outcome{err: err}
	}
	return c.run(ctx, k, lock, fn)
}

// replay returns the outcome of a call that found a record.
func (c call) replay(rec record, err error) outcome {
	if err != nil {
		return outcome{err: err}
	}
	result, err := rec.outcome(c.digest)
	return outcome{result: result, replayed: !errors.Is(err, ErrMismatch), err: err}
}

// obtain takes the key's lock, renewed until it is released, waiting for at
// most c.wait while another call holds it.
func (c call) obtain(ctx context.Context, k keys) (*dlock.Lock, error) {
	s := c.s
	opts := []dlock.ObtainOption{dlock.WithAutoRenew(true), door.WithGuard[dlock.ObtainOption](k.record)}
	if c.wait == 0 {
		lock, err := s.locker.TryObtain(ctx, k.lock, s.cfg.lockTTL, opts...)
		switch {
		case errors.Is(err, dlock.ErrNotObtained):
			return nil, ErrInProgress
		case errors.Is(err, door.ErrGuarded):
			return nil, err // a stored outcome
		case err != nil:
			return nil, unavailable("lock the key", err)
		}
		return lock, nil
	}
	wait, cancel := context.WithTimeout(ctx, c.wait)
	defer cancel()
	lock, err := s.locker.Obtain(wait, k.lock, s.cfg.lockTTL, opts...)
	switch {
	case err == nil, errors.Is(err, door.ErrGuarded):
		return lock, err
	case errors.Is(err, dlock.ErrNotObtained) && ctx.Err() != nil:
		return nil, fmt.Errorf("%w: %w", ErrInProgress, ctxerr.Of(ctx))
	case errors.Is(err, dlock.ErrNotObtained):
		return nil, fmt.Errorf("%w: still running after a wait of %v", ErrInProgress, c.wait)
	case ctx.Err() != nil:
		return nil, ctxerr.Of(ctx)
	}
	return nil, unavailable("lock the key", err)
}

// unavailable wraps an error of Redis before fn ran.
func unavailable(what string, err error) error {
	switch {
	case errors.Is(err, dlock.ErrClosed):
		return fmt.Errorf("%w: %w", ErrClosed, err)
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded), errors.Is(err, ErrClosed):
		return err // the caller's context ended, or the Store closed: not Redis's doing
	}
	return fmt.Errorf("%w: %s: %w", ErrUnavailable, what, err)
}

// run runs fn under lock, stores its outcome if it should be, and releases
// the lock.
func (c call) run(ctx context.Context, k keys, lock *dlock.Lock, fn func(context.Context) ([]byte, error)) (o outcome) {
	s := c.s
	o.ran = true
	finished := false
	defer func() {
		if !finished { // fn panicked: free the key, and let the panic go on
			s.release(ctx, lock)
		}
	}()
	o.result, o.err = runHeld(ctx, lock, fn)
	finished = true

	rec, err := c.record(o.result, o.err)
	if err == nil && rec != nil {
		err = s.storeAndRelease(ctx, k, lock, rec)
	} else {
		s.release(ctx, lock)
	}
	if err != nil {
		o.err = errors.Join(o.err, err)
	}
	return o
}

// runHeld runs fn with a context that is also cancelled, with the lock's
// error as its cause, when the lock is lost.
func runHeld(ctx context.Context, lock *dlock.Lock, fn func(context.Context) ([]byte, error)) ([]byte, error) {
	work, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	stop := make(chan struct{})
	watched := make(chan struct{})
	go func() {
		defer close(watched)
		select {
		case <-lock.Done():
			cancel(lock.Err())
		case <-stop:
		}
	}()
	defer func() {
		close(stop)
		<-watched
	}()
	return fn(work)
}

// record returns the record to store for fn's result and error, nil if
// there is nothing to store, or an error wrapping ErrTooLarge.
func (c call) record(result []byte, err error) ([]byte, error) {
	rec := record{kind: kindResult, digest: c.digest, payload: result}
	switch {
	case err != nil && !isFinal(err):
		return nil, nil
	case err != nil:
		rec.kind, rec.payload = kindFinalError, []byte(err.Error())
	}
	if limit := c.s.cfg.maxResult; len(rec.payload) > limit {
		return nil, fmt.Errorf("%w: %d bytes, the limit is %d", ErrTooLarge, len(rec.payload), limit)
	}
	return rec.encode(), nil
}

// storeAndRelease stores rec as the key's outcome and releases its lock,
// in one step, if the lock is still ours. It is sent even if ctx has ended
// (fn ran: its outcome must not be lost), and waits at most the lock's
// time to live. It returns an error wrapping ErrNotStored when nothing was
// written, and ErrMaybeStored when that is not known: then the lock is
// released all the same (or expires), and the next call finds the outcome
// or runs fn again.
func (s *Store) storeAndRelease(ctx context.Context, k keys, lock *dlock.Lock, rec []byte) error {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), s.cfg.lockTTL)
	defer cancel()
	err := door.ReleaseStoring(ctx, lock, k.record, rec, s.cfg.retention)
	switch {
	case err == nil:
		return nil
	case errors.Is(err, dlock.ErrNotHeld):
		// The lock is not ours, so nothing was written; lock.Err says how
		// the lock was lost, if it knows.
		return errors.Join(fmt.Errorf("%w: the key's lock is not ours any more", ErrNotStored), lock.Err())
	case errors.Is(err, dlock.ErrClosed):
		// refused before it was sent
		return fmt.Errorf("%w: %w: %w", ErrNotStored, ErrClosed, err)
	}
	// Redis failed or did not answer: the command, or a copy of it that
	// go-redis sent again, may have run, or may still run.
	s.release(ctx, lock)
	return fmt.Errorf("%w: %w", ErrMaybeStored, err)
}

// release releases the key's lock, even if ctx has ended, waiting at most
// the lock's time to live. A lock that is not held any more needs nothing.
func (s *Store) release(ctx context.Context, lock *dlock.Lock) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), s.cfg.lockTTL)
	defer cancel()
	if err := lock.Release(ctx); err != nil && !errors.Is(err, dlock.ErrNotHeld) {
		s.cfg.logger.Warn("idempotency: could not release a key's lock; it expires by itself",
			"ttl", s.cfg.lockTTL, "error", err)
	}
}
