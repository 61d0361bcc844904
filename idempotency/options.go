package idempotency

import (
	"fmt"
	"log/slog"
	"time"
)

// Defaults of the options of New.
const (
	// DefaultRetention is how long a result is kept: see WithRetention.
	DefaultRetention = 24 * time.Hour
	// DefaultWait is how long a call waits for a concurrent first call
	// with the same key: see WithWait.
	DefaultWait = 30 * time.Second
	// DefaultMaxResult is the largest result stored, in bytes: see
	// WithMaxResult.
	DefaultMaxResult = 1 << 20
	// DefaultPrefix starts the names of the Redis keys of a Store: see
	// WithPrefix.
	DefaultPrefix = "idem:"
	// DefaultLockTTL is the time to live of the lock a first call holds
	// while fn runs: see WithLockTTL.
	DefaultLockTTL = 10 * time.Second
)

// Option configures a Store. Pass options to New.
type Option func(*config)

type config struct {
	retention time.Duration
	wait      time.Duration
	maxResult int
	prefix    string
	lockTTL   time.Duration
	logger    *slog.Logger
	err       error
}

// newConfig returns the configuration of opts, with logger as the default
// logger.
func newConfig(logger *slog.Logger, opts []Option) config {
	c := config{
		retention: DefaultRetention,
		wait:      DefaultWait,
		maxResult: DefaultMaxResult,
		prefix:    DefaultPrefix,
		lockTTL:   DefaultLockTTL,
		logger:    logger,
	}
	for _, opt := range opts {
		if opt == nil {
			c.err = fmt.Errorf("%w: nil Option", ErrInvalidOption)
			break
		}
		if opt(&c); c.err != nil {
			break
		}
	}
	return c
}

// invalid records an invalid option.
func (c *config) invalid(format string, args ...any) {
	c.err = fmt.Errorf("%w: "+format, append([]any{ErrInvalidOption}, args...)...)
}

// WithRetention sets how long a stored result is kept, counted from when it
// was stored. Until then, calls with the key get it without running fn;
// afterwards the key is free again, and a call runs fn. The default is
// DefaultRetention (24 hours); it must be at least a millisecond.
func WithRetention(d time.Duration) Option {
	return func(c *config) {
		if d < time.Millisecond {
			c.invalid("WithRetention(%v): must be at least 1ms", d)
			return
		}
		c.retention = d
	}
}

// WithWait sets how long Do waits for a concurrent call with the same key to
// finish before it returns ErrInProgress; its context may end the wait
// earlier. A waiting call is woken when the first one finishes, and then
// returns its stored result, or runs fn if the first one stored nothing (it
// failed). WithWait(0) makes Do return ErrInProgress at once. The default is
// DefaultWait (30 seconds). The Middleware does not wait unless
// WithWaitForInProgress says so.
func WithWait(d time.Duration) Option {
	return func(c *config) {
		if d < 0 {
			c.invalid("WithWait(%v): must not be negative", d)
			return
		}
		c.wait = d
	}
}

// WithMaxResult sets the size of the largest result that is stored, in
// bytes; for the Middleware, of the response's status, headers, body and
// trailer fields together. A larger result is not stored (see ErrTooLarge) and frees the
// key. The default is DefaultMaxResult (1 MiB); it must be positive.
func WithMaxResult(n int) Option {
	return func(c *config) {
		if n <= 0 {
			c.invalid("WithMaxResult(%d): must be positive", n)
			return
		}
		c.maxResult = n
	}
}

// WithPrefix sets the prefix of the names of the Store's Redis keys, to keep
// apart stores that share a Redis. The default is DefaultPrefix ("idem:").
// It must not be empty.
func WithPrefix(p string) Option {
	return func(c *config) {
		if p == "" {
			c.invalid("WithPrefix(\"\"): the prefix must not be empty")
			return
		}
		c.prefix = p
	}
}

// WithLockTTL sets the time to live of the lock that a first call holds while
// fn runs. The lock is renewed while fn runs, so this is not a limit on fn:
// it is how long the key stays blocked after the process running fn died,
// before another call can run fn. The default is DefaultLockTTL (10
// seconds); it must be at least a millisecond.
func WithLockTTL(d time.Duration) Option {
	return func(c *config) {
		if d < time.Millisecond {
			c.invalid("WithLockTTL(%v): must be at least 1ms", d)
			return
		}
		c.lockTTL = d
	}
}

// WithLogger sets where the Store reports what it cannot return to a caller,
// such as a response too large to store, a lock lost while its request ran,
// or a failed release. The default is the logger of the dlock Client given
// to New (dlock.WithLogger); to discard, pass slog.New(slog.DiscardHandler).
func WithLogger(l *slog.Logger) Option {
	return func(c *config) {
		if l == nil {
			c.invalid("WithLogger(nil)")
			return
		}
		c.logger = l
	}
}
