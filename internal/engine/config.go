package engine

import (
	"fmt"
	"time"

	"github.com/dlock-go/dlock/internal/slot"
)

// Config is how one acquire goes: what dlock's ObtainOptions set.
type Config struct {
	Backoff   Backoff
	AutoRenew bool
	Fair      bool
	NoWait    bool   // WithoutWait
	Guard     string // WithGuard
	Record    bool   // AsRecord
	// ValueSuffix (WithValue) and HolderSuffix (the Client's holder name)
	// follow the random part of every token (see token.go)
	ValueSuffix, HolderSuffix string
}

// Backoff is dlock.Backoff: how long a waiter sleeps between attempts.
type Backoff interface {
	Delay(attempt int, holderTTL time.Duration) time.Duration
}

// newToken returns a fresh token for an acquire with this Config: random,
// followed by the holder's name and the value if there are.
func (c Config) newToken() string { return newTokenWith(c.HolderSuffix, c.ValueSuffix) }

// CheckConfig validates the options of an acquire on the name key, read
// into cfg, for this Engine.
func (e *Engine) CheckConfig(key string, cfg Config) error {
	if err := e.checkGuard(key, cfg); err != nil {
		return err
	}
	if cfg.Fair && e.quorum != nil {
		return fmt.Errorf("%w: WithFair needs one Redis deployment; a Redlock quorum has no single queue", ErrInvalidOption)
	}
	return nil
}

// CheckKey validates the name of a lock, on an Engine that is not closed.
func (e *Engine) CheckKey(key string) error {
	if err := e.Usable(); err != nil {
		return err
	}
	if key == "" {
		return fmt.Errorf("%w: empty key", ErrInvalidKey)
	}
	return nil
}

// CheckTTL validates a time to live.
func CheckTTL(ttl time.Duration) error {
	if ttl < time.Millisecond {
		return fmt.Errorf("%w: %v is under the minimum of 1ms", ErrInvalidTTL, ttl)
	}
	return nil
}

// checkGuard validates WithGuard's key against the lock's.
func (e *Engine) checkGuard(key string, cfg Config) error {
	switch {
	case cfg.Guard == "":
		return nil
	case e.quorum != nil:
		return fmt.Errorf("%w: WithGuard needs one Redis deployment; a Redlock quorum cannot read a key and take a lock in one step", ErrInvalidOption)
	case slot.Of(cfg.Guard) != slot.Of(key):
		return fmt.Errorf("%w: guard key %s is in Cluster slot %d, the lock %s in %d: give both the same hash tag",
			ErrInvalidKey, QuoteKey(cfg.Guard), slot.Of(cfg.Guard), QuoteKey(key), slot.Of(key))
	}
	return nil
}

// FairLease is how long a fair waiter keeps its place in the queue without
// renewing it. A waiter renews it every FairLease/3 while it waits.
const FairLease = 2 * time.Second

// Keys returns the KEYS of the scripts on the lock named key: a Redlock
// node has no queue of waiters.
func (e *Engine) Keys(key string) []string {
	if e.quorum != nil {
		return lockKeys(key)
	}
	return queueKeys(key)
}

// Validity of a hold, as in the Redlock algorithm: a hold obtained with
// ttl is trusted until sent + ttl - drift, where sent is when the acquire
// was sent and drift = ttl/driftFactor + minDrift covers clock drift
// between the client and Redis and the time Redis takes to act.
const (
	driftFactor = 100                  // drift is one percent of the ttl ...
	minDrift    = 2 * time.Millisecond // ... plus two milliseconds
)

// Drift is the margin taken off a hold's validity (see Hold.Until).
func Drift(ttl time.Duration) time.Duration {
	return ttl/driftFactor + minDrift
}
