package dlock_test

import (
	"log/slog"
	"testing"

	"github.com/dlock-go/dlock"
	"github.com/dlock-go/dlock/internal/testenv/lockenv"
)

// Logger returns the logger of WithLogger, and slog.Default() as it was at
// New without it, so that packages built on the Client are not silent.
func TestLogger(t *testing.T) {
	t.Parallel()
	rdb := setup(t).rdb
	given := slog.New(slog.DiscardHandler)
	if got := lockenv.Locker(t, rdb, dlock.WithLogger(given)).Logger(); got != given {
		t.Errorf("Logger with WithLogger = %p, want %p", got, given)
	}
	if got := lockenv.Locker(t, rdb).Logger(); got != slog.Default() {
		t.Errorf("Logger without WithLogger = %p, want slog.Default() %p", got, slog.Default())
	}
}
