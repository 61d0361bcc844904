//go:build linux

package pgtest

import (
	"testing"

	"github.com/dlock-go/dlock/internal/testenv"
)

// A server outlives the thread that started it: the parent-death signal
// that stops it with its test binary follows the thread that started
// postgres, and Go ends a thread when a goroutine exits while locked to it.
func TestServerOutlivesStartingThread(t *testing.T) {
	s := New(t)
	s.Stop()
	var err error
	testenv.OnEndingThread(t, func() { err = s.Start() })
	if err != nil {
		t.Fatal(err)
	}
	// The signal is sent as the thread exits, before it is gone from /proc:
	// a server it killed accepts no connection.
	if err := s.command("pg_isready", "-q", "-h", s.dir, "-p", port, "-U", "postgres").Run(); err != nil {
		t.Fatalf("postgres died with the thread that started it: pg_isready: %v", err)
	}
}
