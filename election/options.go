package election

import (
	"fmt"
	"log/slog"
	"time"
)

// DefaultTTL is the leadership lease of an election without WithTTL.
const DefaultTTL = 10 * time.Second

// Option configures an Election. Pass options to New.
type Option func(*config)

type config struct {
	ttl    time.Duration
	logger *slog.Logger
	err    error
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

// WithLogger sets where the election reports what it does not return to a
// caller: the failed campaigns that Lead retries (Warn, with the error and
// the pause before the next one), the campaign that succeeds after them
// (Info), a leadership that Lead lost and campaigns for again (Warn), and
// a Redlock campaign that Campaign repeats because no term was agreed
// (Warn). Records carry the attribute "election" with the election's name.
//
// The default is the dlock Client's logger (dlock.WithLogger, whose own
// default is slog.Default()), so that an election that cannot reach Redis
// is never silent.
func WithLogger(l *slog.Logger) Option {
	return func(c *config) {
		if l == nil {
			c.err = fmt.Errorf("%w: WithLogger(nil)", ErrInvalid)
			return
		}
		c.logger = l
	}
}
