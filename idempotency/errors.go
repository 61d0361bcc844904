package idempotency

import (
	"errors"
)

// Errors returned by this package; test for them with errors.Is.
var (
	// ErrInProgress means another call with the same key is running and
	// this one did not wait for it (see WithWait), or gave up waiting.
	ErrInProgress = errors.New("idempotency: a call with this key is in progress")

	// ErrMismatch means the key was used before with another fingerprint:
	// a different request reuses the key.
	ErrMismatch = errors.New("idempotency: key reused with another fingerprint")

	// ErrTooLarge means fn returned a result larger than WithMaxResult.
	// It was not stored, and the next call with the key runs fn again.
	ErrTooLarge = errors.New("idempotency: result too large to store")

	// ErrUnavailable means Redis failed, or did not answer, before fn ran:
	// fn did not run, and nothing changed. The error also holds Redis's
	// error. A caller may retry, or decide to run fn unprotected (the
	// Middleware does with WithFailOpen).
	ErrUnavailable = errors.New("idempotency: redis unavailable")

	// ErrNotStored means fn ran, but its result was not stored: the lock
	// on the key was lost while fn ran (see dlock.ErrLockLost, also in the
	// error), or the dlock Client was closed. Do still returns fn's result.
	// The next call with the key runs fn again.
	ErrNotStored = errors.New("idempotency: result not stored")

	// ErrMaybeStored means fn ran, and whether its result was stored is
	// not known: Redis failed, or did not answer in time, while the
	// result was being stored, and the command may still have run. Do
	// still returns fn's result. The next call with the key gets the
	// stored result, if it was stored, or runs fn again.
	ErrMaybeStored = errors.New("idempotency: whether the result was stored is unknown")

	// ErrInvalidKey means an empty key.
	ErrInvalidKey = errors.New("idempotency: invalid key")

	// ErrInvalidOption means an option was given a value it cannot use, or
	// New a dlock Client it cannot use: nil, a Redlock, or one that cannot
	// work. Every call of a Store that New did not make returns it.
	ErrInvalidOption = errors.New("idempotency: invalid option")

	// ErrClosed means the Store was closed.
	ErrClosed = errors.New("idempotency: store closed")

	// ErrCorrupt means the key's stored record could not be read: it was
	// written by something else, or by an incompatible version.
	ErrCorrupt = errors.New("idempotency: stored record unreadable")
)

// FinalError is an error that fn returned marked with Final: it is stored
// as the key's outcome and replayed to later callers. Replayed, Err keeps
// only the message of the original error.
type FinalError struct {
	Err error // the error given to Final; replayed, an error with its message
}

// Final marks err as the final outcome of a call of Do: it is stored like
// a result, and later calls with the same key return it (as a *FinalError
// with the same message) without running fn. Use it for failures that a
// retry cannot change, such as a declined card. Errors not marked final are
// not stored, and the next call runs fn again. Final(nil) is nil.
func Final(err error) error {
	if err == nil {
		return nil
	}
	return &FinalError{Err: err}
}

// Error returns the message of the final error.
func (e *FinalError) Error() string { return e.Err.Error() }

// Unwrap returns the final error.
func (e *FinalError) Unwrap() error { return e.Err }

// isFinal reports whether err was marked with Final.
func isFinal(err error) bool {
	var f *FinalError
	return errors.As(err, &f)
}
