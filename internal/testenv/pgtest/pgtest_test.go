package pgtest_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dlock-go/dlock/internal/testenv/pgtest"
)

// A server starts, serves its socket, stops and starts again.
func TestServer(t *testing.T) {
	s := pgtest.New(t)
	if !socketExists(t, s) {
		t.Fatalf("no socket for %s", s.DSN())
	}
	s.Stop()
	if socketExists(t, s) {
		t.Fatalf("socket still there after Stop")
	}
	if err := s.Start(); err != nil {
		t.Fatal(err)
	}
	if !socketExists(t, s) {
		t.Fatalf("no socket after Start")
	}
}

func socketExists(t *testing.T, s *pgtest.Server) bool {
	t.Helper()
	var dir string
	for _, kv := range strings.Fields(s.DSN()) {
		if h, ok := strings.CutPrefix(kv, "host="); ok {
			dir = h
		}
	}
	_, err := os.Stat(filepath.Join(dir, ".s.PGSQL.5432"))
	return err == nil
}
