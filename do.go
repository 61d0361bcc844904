package dlock

import (
	"context"
	"errors"
	"time"

	"github.com/dlock-go/dlock/internal/engine"
)

// Do obtains the lock named key for ttl, runs fn while holding it, and
// releases it when fn returns, also when fn panics.
//
// Do waits for the lock as Obtain does, until ctx ends; with WithoutWait it
// makes one attempt and returns an error wrapping ErrNotObtained at once
// when another holder has the lock, so that of several instances started
// together only one runs fn. WithMinHold keeps the lock, instead of
// releasing it, until a given time after it was obtained, so that an
// instance started a little later does not run fn again either.
//
// The lock is renewed automatically while fn runs (WithAutoRenew(false)
// turns that off). The context fn gets is cancelled the moment the lock is
// lost, with a cause wrapping ErrLockLost (see context.Cause), and also when
// ctx is; fn should stop its work then. LockFromContext gets the Lock from
// it, for its fence.
//
// Do returns the error of Obtain if the lock was not obtained, and
// otherwise fn's error joined with the lock's: one wrapping ErrLockLost if
// it was lost while fn ran, or the error of the release. The release is
// sent even if ctx has ended by then, and waits at most ttl.
func (c *Client) Do(ctx context.Context, key string, ttl time.Duration, fn func(ctx context.Context) error, opts ...DoOption) (err error) {
	if fn == nil {
		return ErrNilFunc
	}
	cfg, err := c.check(key, ttl, doObtainOptions(opts))
	if err != nil {
		return err
	}
	if c.obs != nil {
		ctx = c.startDo(ctx, engine.KindLock, key)
		defer c.observeDo(ctx, engine.KindLock, key, time.Now(), &err)
	}
	return c.holdWhile(ctx, cfg, fn, func() (*Lock, error) {
		return c.acquire(ctx, engine.KindLock, c.e.Keys(key), ttl, nil, true, cfg)
	})
}

// holdWhile obtains a Lock with obtain and runs fn while it holds it, as
// Do says, for every kind of hold.
func (c *Client) holdWhile(ctx context.Context, cfg obtainConfig, fn func(ctx context.Context) error, obtain func() (*Lock, error)) (err error) {
	if cfg.Record {
		return errRecordInDo
	}
	lock, err := obtain()
	if err != nil {
		return err
	}
	keepUntil := time.Now().Add(cfg.minHold)
	work, cancel := context.WithCancelCause(context.WithValue(ctx, lockKey{}, lock))
	stop := context.AfterFunc(lock.h.Lifetime(), func() { cancel(lock.Err()) })
	defer func() {
		stop()
		cancel(nil)
		err = errors.Join(err, lock.finish(context.WithoutCancel(ctx), keepUntil))
	}()
	return fn(work)
}

// lockKey is the context key of the Lock that Do holds.
type lockKey struct{}

// LockFromContext returns the Lock that Client.Do holds while it runs its
// function, from the context the function was given, for instance to pass
// its Fence to the protected resource. It reports false for any other
// context.
func LockFromContext(ctx context.Context) (*Lock, bool) {
	l, ok := ctx.Value(lockKey{}).(*Lock)
	return l, ok
}

// finish releases a lock at the end of Do, or keeps it until keepUntil
// (WithMinHold). A lock that was lost meanwhile is not released again:
// finish returns why it was lost.
func (l *Lock) finish(ctx context.Context, keepUntil time.Time) error {
	if err := l.Err(); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, l.h.CurrentTTL())
	defer cancel()
	err := l.ReleaseAfter(ctx, time.Until(keepUntil))
	if errors.Is(err, ErrNotHeld) {
		if lost := l.Err(); errors.Is(lost, ErrLockLost) {
			return lost // lost just before the release: say how
		}
	}
	return err
}
