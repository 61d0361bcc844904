package engine

import (
	"time"
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

// newMultiToken returns a fresh token for a multi-key holding: as newToken,
// marked as one (see multiMark).
func (c Config) newMultiToken() string {
	return newTokenWith(multiMark+c.HolderSuffix, c.ValueSuffix)
}

// FairLease is how long a fair waiter keeps its place in the queue without
// renewing it. A waiter renews it every FairLease/3 while it waits.
const FairLease = 2 * time.Second

// Validity of a hold, as in the Redlock algorithm: a hold obtained with
// ttl is trusted until sent + ttl - drift, where sent is when the acquire
// was sent and drift = ttl/driftFactor + minDrift covers clock drift
// between the client and Redis and the time Redis takes to act.
const (
	driftFactor = 100                  // drift is one percent of the ttl ...
	minDrift    = 2 * time.Millisecond // ... plus two milliseconds
)

// drift is the margin taken off a hold's validity (see Hold.Until).
func drift(ttl time.Duration) time.Duration {
	return ttl/driftFactor + minDrift
}
