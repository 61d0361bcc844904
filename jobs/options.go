package jobs

import (
	"fmt"
	"os"
	"time"
)

// Defaults of a Runner's options.
const (
	DefaultTTL       = 30 * time.Second // the lease of a running job, renewed at a third
	DefaultRetention = 24 * time.Hour   // how long the records of a slot are kept
	DefaultAttempts  = 1                // attempts per slot, across hosts
	// RetentionPeriods is how many periods the records of a slot are kept
	// when WithPeriod tells the period (and WithRetention does not say).
	RetentionPeriods = 3
)

// Option configures a Runner. Pass options to New.
type Option func(*config)

type config struct {
	ttl       time.Duration
	retention time.Duration
	retained  bool          // WithRetention was given
	period    time.Duration // WithPeriod; 0 if not given
	attempts  int
	host      string
	err       error
}

func newConfig(opts []Option) (config, error) {
	host, _ := os.Hostname()
	c := config{ttl: DefaultTTL, retention: DefaultRetention, attempts: DefaultAttempts, host: host}
	for _, opt := range opts {
		if opt == nil {
			return c, fmt.Errorf("%w: nil Option", ErrInvalid)
		}
		if opt(&c); c.err != nil {
			return c, c.err
		}
	}
	c.host = truncate(c.host, maxHostLen)
	if c.period > 0 && !c.retained {
		c.retention = RetentionPeriods * c.period
	}
	return c, nil
}

// WithTTL sets the lease of a running job: the lock of its slot, renewed
// a third of ttl after each renewal while the job runs. A host that dies
// while it runs the job holds the slot up for ttl at most. The default is
// DefaultTTL; ttl must be at least a millisecond.
func WithTTL(ttl time.Duration) Option {
	return func(c *config) {
		if ttl < time.Millisecond {
			c.err = fmt.Errorf("%w: WithTTL(%v): at least 1ms", ErrInvalid, ttl)
			return
		}
		c.ttl = ttl
	}
}

// WithRetention sets how long the records of a slot are kept in Redis
// after they are written: the done record that makes later and late hosts
// skip the slot, and the records of attempts that History shows. Keep it
// longer than the period of the job plus the largest clock skew among the
// hosts (and some, for History): a host that fires after the records of
// its slot expired runs the job again. The default is RetentionPeriods
// periods with WithPeriod, else DefaultRetention (a day), which suits jobs
// that run up to a few times a day. retention must be at least a
// millisecond.
func WithRetention(retention time.Duration) Option {
	return func(c *config) {
		if retention < time.Millisecond {
			c.err = fmt.Errorf("%w: WithRetention(%v): at least 1ms", ErrInvalid, retention)
			return
		}
		c.retention, c.retained = retention, true
	}
}

// WithPeriod tells the Runner the period of its jobs' schedule, the every
// of Slot: the records of a slot are then kept RetentionPeriods periods
// (unless WithRetention sets another retention), long enough for late
// hosts and for History, short enough that a slot's records go away in
// step with the schedule. Without it, records are kept DefaultRetention.
// period must be at least a millisecond.
func WithPeriod(period time.Duration) Option {
	return func(c *config) {
		if period < time.Millisecond {
			c.err = fmt.Errorf("%w: WithPeriod(%v): at least 1ms", ErrInvalid, period)
			return
		}
		c.period = period
	}
}

// WithAttempts sets how many attempts a slot allows, across hosts: after a
// failed run (an error, a panic, the lease lost, a host that died), the
// next Run of the same slot, on any host, tries again, until n attempts
// were made. The default is DefaultAttempts (1: a failed slot is not
// retried); n must be at least 1.
func WithAttempts(n int) Option {
	return func(c *config) {
		if n < 1 {
			c.err = fmt.Errorf("%w: WithAttempts(%d): at least 1", ErrInvalid, n)
			return
		}
		c.attempts = n
	}
}

// WithHost sets the name of this host in the records (History), cut to
// 100 bytes (as JSON: control characters count six). The default is the
// name os.Hostname returns when New is called.
func WithHost(host string) Option {
	return func(c *config) { c.host = host }
}
