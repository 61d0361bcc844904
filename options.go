package dlock

import (
	"fmt"
	"log/slog"
	"time"
)

// Option configures a Client. Pass options to New.
type Option func(*clientConfig)

type clientConfig struct {
	logger *slog.Logger
	err    error
}

// WithLogger sets where the Client reports what it cannot return to a caller,
// such as a failed clean-up of a lock whose acquire reply was lost. The
// default discards everything.
func WithLogger(l *slog.Logger) Option {
	return func(c *clientConfig) {
		if l == nil {
			c.err = fmt.Errorf("%w: WithLogger(nil)", ErrInvalidOption)
			return
		}
		c.logger = l
	}
}

// ObtainOption configures one call of Obtain or TryObtain.
type ObtainOption func(*obtainConfig)

type obtainConfig struct {
	backoff Backoff
	err     error
}

// WithBackoff sets how long Obtain sleeps between attempts while another
// holder has the lock. Obtain never sleeps past the holder's expiry, whatever
// the strategy says. The default is
// ExponentialBackoff(DefaultMinBackoff, DefaultMaxBackoff). TryObtain makes
// one attempt and ignores it.
func WithBackoff(b Backoff) ObtainOption {
	return func(c *obtainConfig) {
		if b == nil {
			c.err = fmt.Errorf("%w: WithBackoff(nil)", ErrInvalidOption)
			return
		}
		if v, ok := b.(interface{ validate() error }); ok {
			if err := v.validate(); err != nil {
				c.err = err
				return
			}
		}
		c.backoff = b
	}
}

// defaultBackoff is immutable and safe to share.
var defaultBackoff = ExponentialBackoff(DefaultMinBackoff, DefaultMaxBackoff)

func newObtainConfig(opts []ObtainOption) (obtainConfig, error) {
	if len(opts) == 0 { // the common case, without the allocation below
		return obtainConfig{backoff: defaultBackoff}, nil
	}
	cfg := obtainConfig{backoff: defaultBackoff}
	for _, opt := range opts {
		if opt == nil {
			return cfg, fmt.Errorf("%w: nil ObtainOption", ErrInvalidOption)
		}
		opt(&cfg)
		if cfg.err != nil {
			return cfg, cfg.err
		}
	}
	return cfg, nil
}

// Validity of a lock, as in the Redlock algorithm: a lock obtained with ttl is
// trusted until sent + ttl - drift, where sent is when the acquire was sent
// and drift = ttl/DriftFactor + MinDrift covers clock drift between the
// client and Redis and the time Redis takes to act.
const (
	DriftFactor = 100                  // drift is one percent of the ttl ...
	MinDrift    = 2 * time.Millisecond // ... plus two milliseconds
)

func drift(ttl time.Duration) time.Duration {
	return ttl/DriftFactor + MinDrift
}
