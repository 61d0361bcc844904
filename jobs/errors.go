package jobs

import "errors"

// Errors of Begin when it does not begin a run, and of bad input. Test for
// them with errors.Is; Run reports the first three as an Outcome instead.
var (
	// ErrAlreadyDone means the job ran successfully in this slot already.
	ErrAlreadyDone = errors.New("jobs: already done in this slot")

	// ErrRunningElsewhere means another host (or goroutine) is running the
	// job in this slot now.
	ErrRunningElsewhere = errors.New("jobs: running elsewhere")

	// ErrNoAttemptsLeft means every attempt the slot allows (WithAttempts)
	// was made, and none succeeded.
	ErrNoAttemptsLeft = errors.New("jobs: no attempts left in this slot")

	// ErrInvalid means an argument or option that cannot be used: a nil
	// Client, an empty or too long job name, a zero slot (Slot of a period
	// that is not positive), a nil function, an attempt finished twice.
	ErrInvalid = errors.New("jobs: invalid argument")
)
