package testenv

import (
	"os"
	"testing"
	"time"
)

// ResendPause is how long a fault test keeps Redis paused (SIGSTOP) with a
// call in flight so that go-redis, with its default options, sends the
// call again: past its ReadTimeout (5 s in go-redis v9.23) and its longest
// retry backoff (1 s). The copy goes out on another connection, and every
// copy runs once Redis is back. Warm the client's pool first (WarmPool), or
// the copy waits for a new connection's handshake and is never sent.
const ResendPause = 7500 * time.Millisecond

// SlowFaults skips a slow fault test unless the environment variable
// DLOCK_SLOW_FAULTS is 1. Each package runs one test of each slow kind by
// default and the others with DLOCK_SLOW_FAULTS=1 (see the README's
// Development section).
func SlowFaults(t testing.TB) {
	t.Helper()
	if os.Getenv("DLOCK_SLOW_FAULTS") != "1" {
		t.Skip("a slow fault test: set DLOCK_SLOW_FAULTS=1 to run it")
	}
}
