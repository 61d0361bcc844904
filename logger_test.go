package dlock_test

import (
	"log/slog"
	"testing"

	"github.com/dlock-go/dlock"
	"github.com/dlock-go/dlock/internal/door"
	"github.com/dlock-go/dlock/internal/testenv/lockenv"
)

// door.Logger returns the logger of WithLogger, and slog.Default() as it was at
// New without it, so that packages built on the Client are not silent.
func TestLogger(t *testing.T) {
	t.Parallel()
	rdb := setup(t).rdb
	given := slog.New(slog.DiscardHandler)
	if got := door.Logger(lockenv.Locker(t, rdb, dlock.WithLogger(given))); got != given {
		t.Errorf("Logger with WithLogger = %p, want %p", got, given)
	}
	if got := door.Logger(lockenv.Locker(t, rdb)); got != slog.Default() {
		t.Errorf("Logger without WithLogger = %p, want slog.Default() %p", got, slog.Default())
	}
}
