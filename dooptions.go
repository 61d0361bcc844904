package dlock

import (
	"fmt"
	"time"
)

// DoOption configures one call of a Do method (Client.Do, Semaphore.Do,
// RWMutex.Do and RDo): any ObtainOption, or one that only Do takes
// (WithoutWait, WithMinHold). The latter are not ObtainOptions, so that
// Obtain(ctx, key, ttl, WithMinHold(d)) does not compile.
type DoOption interface {
	applyDo(*obtainConfig)
}

// doOnly is a DoOption that is not an ObtainOption.
type doOnly func(*obtainConfig)

func (o doOnly) applyDo(c *obtainConfig) { o(c) }

// WithoutWait makes a Do method make one attempt, as TryObtain does: when
// another holder has the lock, the error wraps ErrNotObtained at once, and
// the function does not run. Of several instances started together, only
// one runs it. The default is to wait, as Obtain does.
func WithoutWait() DoOption {
	return doOnly(func(c *obtainConfig) { c.noWait = true })
}

// WithMinHold makes a Do method keep the lock until d after it was
// obtained, however soon its function returns (with an error, or by a
// panic, too): instead of releasing it, Do then stops renewing it and lets
// it expire at that time (Lock.ReleaseAfter). A job that every host starts
// at about the same time, from cron, runs once even if a host's clock is
// late by less than d, while a lock released when a fast job ends would be
// free for that host to run the job again. d must not be negative; the
// default is 0: Do releases the lock when its function returns. A Lock
// from Obtain keeps itself the same way with Lock.ReleaseAfter.
func WithMinHold(d time.Duration) DoOption {
	return doOnly(func(c *obtainConfig) {
		if d < 0 {
			c.err = fmt.Errorf("%w: WithMinHold(%v) needs a duration of 0 or more", ErrInvalidOption, d)
			return
		}
		c.minHold = d
	})
}

// doObtainOptions returns the options of a Do's obtain: renewed by
// default, then opts. A nil option stays nil, for newObtainConfig to refuse.
func doObtainOptions(opts []DoOption) []ObtainOption {
	all := make([]ObtainOption, 1, len(opts)+1)
	all[0] = WithAutoRenew(true)
	for _, o := range opts {
		if o == nil {
			all = append(all, nil)
			continue
		}
		all = append(all, o.applyDo)
	}
	return all
}
