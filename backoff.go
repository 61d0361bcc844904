package dlock

import (
	"fmt"
	"math/rand/v2"
	"time"
)

// Defaults of ExponentialBackoff as used by Obtain.
const (
	DefaultMinBackoff = 2 * time.Millisecond   // the first retry waits about this long
	DefaultMaxBackoff = 256 * time.Millisecond // no retry waits longer
)

// Backoff chooses how long Obtain waits before its next attempt while another
// holder has the lock. Implementations must be safe for concurrent use.
type Backoff interface {
	// Delay returns how long to wait after the attempt-th failed attempt
	// (attempt >= 1). holderTTL is what the holder had left when that attempt
	// failed, or a negative value when it is unknown (a key without expiry).
	// Obtain never waits longer than holderTTL when it is known; a negative
	// Delay counts as zero.
	Delay(attempt int, holderTTL time.Duration) time.Duration
}

// ExponentialBackoff returns a Backoff that doubles from first up to
// ceiling, with "equal jitter": each delay is uniform in [d/2, d], so waiters
// that failed together do not retry together. It requires
// 0 < first <= ceiling; Obtain returns ErrInvalidOption otherwise.
func ExponentialBackoff(first, ceiling time.Duration) Backoff {
	return exponential{first: first, ceiling: ceiling}
}

type exponential struct{ first, ceiling time.Duration }

func (e exponential) validate() error {
	if e.first <= 0 || e.ceiling < e.first {
		return fmt.Errorf("%w: ExponentialBackoff(%v, %v) needs 0 < first <= ceiling", ErrInvalidOption, e.first, e.ceiling)
	}
	return nil
}

func (e exponential) Delay(attempt int, _ time.Duration) time.Duration {
	d := e.ceiling
	if shift := attempt - 1; shift >= 0 && shift < 32 && e.first<<shift < e.ceiling && e.first<<shift > 0 {
		d = e.first << shift
	}
	return d/2 + rand.N(d/2+1)
}

// FixedBackoff returns a Backoff that waits d, give or take a tenth, after
// every attempt. It requires d > 0; Obtain returns ErrInvalidOption otherwise.
func FixedBackoff(d time.Duration) Backoff {
	return fixed(d)
}

type fixed time.Duration

func (f fixed) validate() error {
	if f <= 0 {
		return fmt.Errorf("%w: FixedBackoff(%v) needs a positive delay", ErrInvalidOption, time.Duration(f))
	}
	return nil
}

func (f fixed) Delay(int, time.Duration) time.Duration {
	d := time.Duration(f)
	return d - d/10 + rand.N(d/5+1)
}
