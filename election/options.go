package election

import (
	"fmt"
	"time"
)

// DefaultTTL is the leadership lease of an election without WithTTL.
const DefaultTTL = 10 * time.Second

// Option configures an Election. Pass options to New.
type Option func(*config)

type config struct {
	ttl time.Duration
	err error
}

// WithTTL sets the leadership lease: a leader renews it a third of ttl
// after each renewal, and a leader that stops renewing (it crashed, it was
// paused, it lost Redis) loses the seat ttl after its last renewal at the
// latest, when another candidate takes over. A shorter lease means a faster
// takeover after a crash and more renewals. The default is DefaultTTL; ttl
// must be at least a millisecond.
func WithTTL(ttl time.Duration) Option {
	return func(c *config) {
		if ttl < time.Millisecond {
			c.err = fmt.Errorf("%w: WithTTL(%v): the lease must be at least 1ms", ErrInvalid, ttl)
			return
		}
		c.ttl = ttl
	}
}
