package dlock

import (
	"context"
	"fmt"
)

// WaitReleaseOf is WaitRelease for a holder known by its token, such as the
// Token of a LockInfo from Inspect: it waits until the lock named key no
// longer holds token, and returns nil at once if it does not hold it now,
// whether it is free or another holder has it. Unlike WaitRelease, it
// cannot wait for a holder that took the lock after the caller looked.
// An empty token is refused with ErrInvalidOption.
func (c *Client) WaitReleaseOf(ctx context.Context, key, token string) error {
	if token == "" {
		return fmt.Errorf("%w: WaitReleaseOf needs a holder's token", ErrInvalidOption)
	}
	return c.waitRelease(ctx, key, token)
}
