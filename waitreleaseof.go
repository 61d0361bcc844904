package dlock

import (
	"context"
	"fmt"
)

// WaitReleaseOf is WaitRelease for a holder known by its fingerprint, such
// as the Fingerprint of a LockInfo from Inspect, or Lock.Fingerprint: it
// waits until that holder no longer holds the lock named key, and returns
// nil at once if it does not hold it now, whether the lock is free or
// another holder has it. Unlike WaitRelease, it cannot miss a holder that
// took the lock after the caller looked. An empty fingerprint is refused
// with ErrInvalidOption.
func (c *Client) WaitReleaseOf(ctx context.Context, key, fingerprint string) error {
	if fingerprint == "" {
		return fmt.Errorf("%w: WaitReleaseOf needs a holder's fingerprint", ErrInvalidOption)
	}
	return c.waitRelease(ctx, key, fingerprint)
}
