package fence

import (
	"errors"
	"fmt"
)

// ErrStale is matched (with errors.Is) by the error of a write refused
// because a higher fence is already recorded for its resource: a holder
// that took the lock after the writer did has written, or begun to write.
// The error is a *StaleError.
var ErrStale = errors.New("fence: stale fence")

// A StaleError is the error of a write refused because Recorded, the
// fence recorded for Resource, is higher than the writer's Fence. It
// matches ErrStale.
type StaleError struct {
	Resource string // the resource written to: Guard's resource, or the Redis key
	Fence    int64  // the writer's fence; 0 for a holder that got none (see Guard)
	Recorded int64  // the higher fence recorded for the resource; 0 with Fence 0
}

// Error says which fence was refused for which resource, and why.
func (e *StaleError) Error() string {
	if e.Fence == 0 {
		return fmt.Sprintf("fence: no fence for %q: the writer's lock was lost before it asked for its fence", e.Resource)
	}
	return fmt.Sprintf("fence: stale fence %d for %q: fence %d is recorded", e.Fence, e.Resource, e.Recorded)
}

// Is reports whether target is ErrStale.
func (e *StaleError) Is(target error) bool { return target == ErrStale }
