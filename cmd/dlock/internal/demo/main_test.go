package demo

import (
	"log/slog"
	"testing"
	"time"

	"github.com/redis/go-redis/v9/logging"
	"go.uber.org/goleak"
)

// TestMain quiets the loggers as dlock's main does, and fails the tests if
// a goroutine outlives them: the cases must stop and wait for every
// goroutine they start, the embedded Redis's included.
func TestMain(m *testing.M) {
	logging.Disable()
	slog.SetDefault(slog.New(slog.DiscardHandler))
	goleak.VerifyTestMain(m)
}

// waitUntil polls cond until it holds, and fails the test after 10s.
func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("waited 10s for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
