package demo

import (
	"log/slog"
	"testing"

	"github.com/redis/go-redis/v9/logging"

	"github.com/dlock-go/dlock/internal/testenv"
)

// TestMain quiets the loggers as dlock's main does, and fails the tests if
// a goroutine outlives them: the cases must stop and wait for every
// goroutine they start, the embedded Redis's included.
func TestMain(m *testing.M) {
	logging.Disable()
	slog.SetDefault(slog.New(slog.DiscardHandler))
	testenv.Main(m)
}
