package election

import "errors"

// Errors of the election itself. Calls wrap them with the election's name;
// test for them with errors.Is. Errors of Redis and of the lock come from
// package dlock (dlock.ErrNotObtained, dlock.ErrLockLost, ...).
var (
	// ErrNoLeader means that nobody leads the election now: the seat is
	// empty.
	ErrNoLeader = errors.New("election: no leader")

	// ErrResigned is what Leadership.Err returns after Resign.
	ErrResigned = errors.New("election: resigned")

	// ErrInvalid means that New or Lead was given something it cannot use:
	// a nil Client, an empty name, an invalid option, a nil function.
	ErrInvalid = errors.New("election: invalid argument")
)
