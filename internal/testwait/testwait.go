// Package testwait is the one wait of dlock's tests: for a condition that
// other goroutines or Redis bring about, polled, with a bound that fails
// the test rather than a sleep that asserts a latency.
package testwait

import (
	"testing"
	"time"
)

// Until fails the test unless cond becomes true within d, polling it every
// 5 milliseconds. what says what was awaited, for the failure.
func Until(t testing.TB, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %v", what, d)
		}
		time.Sleep(5 * time.Millisecond)
	}
}
