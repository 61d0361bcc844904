// Package ctxerr says why a context ended, for the errors of dlock's
// packages.
package ctxerr

import (
	"cmp"
	"context"
	"errors"
	"fmt"
)

// Of returns the error of a done context in which errors.Is finds both
// ctx.Err() and the cause given to a CancelCauseFunc, if any.
func Of(ctx context.Context) error {
	err, cause := ctx.Err(), context.Cause(ctx)
	if cause == nil || errors.Is(cause, err) {
		return cmp.Or(cause, err)
	}
	return fmt.Errorf("%w: %w", err, cause)
}
