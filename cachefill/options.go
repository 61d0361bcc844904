package cachefill

import (
	"fmt"
	"log/slog"
	"strings"
	"time"
)

// Defaults of the options.
const (
	// DefaultPrefix starts the name of every key of a Cache.
	DefaultPrefix = "cachefill"
	// DefaultLockTTL is the ttl of a loader's lock: see WithLockTTL.
	DefaultLockTTL = 5 * time.Second
	// DefaultLoadTimeout bounds one load: see WithLoadTimeout.
	DefaultLoadTimeout = 10 * time.Second
	// DefaultNotFoundTTL is how long ErrNotFound is remembered: see WithNotFoundTTL.
	DefaultNotFoundTTL = 30 * time.Second
	// DefaultJitter is the share of a ttl taken off at random: see WithJitter.
	DefaultJitter = 0.05
	// DefaultBeta weighs early refreshes: see WithEarlyRefresh.
	DefaultBeta = 1.0
	// DefaultRedisTimeout bounds each call to Redis: see WithRedisTimeout.
	DefaultRedisTimeout = time.Second
)

// Option configures a Cache. Pass options to New.
type Option func(*options)

type options struct {
	prefix       string
	lockTTL      time.Duration
	loadTimeout  time.Duration
	notFoundTTL  time.Duration
	jitter       float64
	beta         float64
	redisTimeout time.Duration
	fallback     bool
	logger       *slog.Logger
	err          error
}

// newOptions returns the options of opts, with logger as the default
// logger.
func newOptions(logger *slog.Logger, opts []Option) (options, error) {
	o := options{
		prefix:       DefaultPrefix,
		lockTTL:      DefaultLockTTL,
		loadTimeout:  DefaultLoadTimeout,
		notFoundTTL:  DefaultNotFoundTTL,
		jitter:       DefaultJitter,
		beta:         DefaultBeta,
		redisTimeout: DefaultRedisTimeout,
		fallback:     true,
		logger:       logger,
	}
	for _, opt := range opts {
		if opt == nil {
			return o, fmt.Errorf("%w: nil Option", ErrInvalidOption)
		}
		if opt(&o); o.err != nil {
			return o, o.err
		}
	}
	return o, nil
}

// WithPrefix sets what the name of every key of the Cache starts with, so
// that several caches share one Redis apart: the entry of "user:42" is kept
// at "cachefill{user:42}:value" and its loader's lock at
// "cachefill{user:42}:lock". It must not contain '{' or '}', which would
// change the keys' Cluster slots. The default is DefaultPrefix.
func WithPrefix(prefix string) Option {
	return func(o *options) {
		if strings.ContainsAny(prefix, "{}") {
			o.err = fmt.Errorf("%w: WithPrefix(%q) contains a brace", ErrInvalidOption, prefix)
			return
		}
		o.prefix = prefix
	}
}

// WithLockTTL sets the ttl of the lock a loader holds while it loads. The
// lock is renewed while the load runs, so the ttl is how long the other
// callers wait for a loader whose process died or hangs before one of them
// loads instead: a waiter that hears nothing looks again after it. Caches
// that share keys should share it. The default is DefaultLockTTL; d must
// be at least a millisecond.
func WithLockTTL(d time.Duration) Option {
	return func(o *options) {
		if d < time.Millisecond {
			o.err = fmt.Errorf("%w: WithLockTTL(%v), want at least 1ms", ErrInvalidOption, d)
			return
		}
		o.lockTTL = d
	}
}

// WithLoadTimeout bounds one load: its context ends after d, and Get stops
// waiting for it then, returns an error to the callers that waited for it
// in this process, and lets a caller elsewhere load instead. The default
// is DefaultLoadTimeout; d must be positive.
func WithLoadTimeout(d time.Duration) Option {
	return func(o *options) {
		if d <= 0 {
			o.err = fmt.Errorf("%w: WithLoadTimeout(%v), want a positive duration", ErrInvalidOption, d)
			return
		}
		o.loadTimeout = d
	}
}

// WithNotFoundTTL sets how long the Cache remembers that a load returned
// ErrNotFound, so that requests for a key the source does not have do not
// all reach it (cache penetration). 0 turns it off: ErrNotFound is then
// returned and not remembered. The default is DefaultNotFoundTTL; d must be
// 0 or at least a millisecond.
func WithNotFoundTTL(d time.Duration) Option {
	return func(o *options) {
		if d < 0 || d > 0 && d < time.Millisecond {
			o.err = fmt.Errorf("%w: WithNotFoundTTL(%v), want 0 or at least 1ms", ErrInvalidOption, d)
			return
		}
		o.notFoundTTL = d
	}
}

// WithJitter makes every stored entry live up to the given share of its ttl
// less, at random: with 0.05, an entry stored for a minute expires between
// 57 and 60 seconds later, so entries filled together do not all expire
// together (cache avalanche). The default is DefaultJitter; share must be
// from 0 (off) to below 1.
func WithJitter(share float64) Option {
	return func(o *options) {
		if !(share >= 0 && share < 1) {
			o.err = fmt.Errorf("%w: WithJitter(%v), want 0 <= share < 1", ErrInvalidOption, share)
			return
		}
		o.jitter = share
	}
}

// WithEarlyRefresh sets beta of the probabilistic early refresh (XFetch,
// Vattani et al., VLDB 2015): a Get that finds an entry refreshes it in the
// background, before it expires, with a probability that grows as the
// entry nears its expiry and with the time its last load took, times beta.
// The hotter the key, the surer it is refreshed in time, so a hot key does
// not miss at all. Above 1 refreshes earlier, below 1 later; 0 turns early
// refresh off. The default is DefaultBeta; beta must be from 0 to 100.
func WithEarlyRefresh(beta float64) Option {
	return func(o *options) {
		if !(beta >= 0 && beta <= 100) {
			o.err = fmt.Errorf("%w: WithEarlyRefresh(%v), want 0 <= beta <= 100", ErrInvalidOption, beta)
			return
		}
		o.beta = beta
	}
}

// WithRedisTimeout bounds each call to Redis that a Get makes before it
// waits for a loader (a read, a store, a lock): Redis counts as
// unreachable when a call takes longer. Waiting for a loader is bounded by
// the Get's context only; it blocks on Redis for d at most at a time, so
// that Close returns within d of it. The default is DefaultRedisTimeout; d
// must be positive.
func WithRedisTimeout(d time.Duration) Option {
	return func(o *options) {
		if d <= 0 {
			o.err = fmt.Errorf("%w: WithRedisTimeout(%v), want a positive duration", ErrInvalidOption, d)
			return
		}
		o.redisTimeout = d
	}
}

// WithFallback sets what Get does when Redis fails (unreachable, or an
// error reply other than a wrong type): with true, the default, it calls
// load directly, once per process and key at a time, since the cache is an
// optimisation, and logs it (see WithLogger); with false, it returns the
// error.
func WithFallback(on bool) Option {
	return func(o *options) {
		o.fallback = on
	}
}

// WithLogger sets where the Cache reports what it cannot return to a
// caller: that Gets fall back on loading directly because Redis failed (a
// Warn, with the key and the error, when the first one does, a Debug for
// each further one, and an Info when a read of Redis succeeds again),
// background refreshes that failed, lost loader locks.
//
// The default is the logger of the dlock Client given to New
// (dlock.WithLogger, itself slog.Default() by default), so that a Cache
// that falls back is never silent; slog.New(slog.DiscardHandler) silences
// it.
func WithLogger(l *slog.Logger) Option {
	return func(o *options) {
		if l == nil {
			o.err = fmt.Errorf("%w: WithLogger(nil)", ErrInvalidOption)
			return
		}
		o.logger = l
	}
}
