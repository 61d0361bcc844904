//go:build unix

package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/dlock-go/dlock/redistest"
)

// TestRunOncePerDoneRecordLate pauses Redis (SIGSTOP) for 5s as the command
// ends, while dlock writes the slot's done record: longer than the 3s
// ReadTimeout, so go-redis (with its default MaxRetries) sends the write
// again; dlock waits for it, and the slot is done: the next dlock of the
// slot exits 79. (A pause of 6s or more outlasts go-redis's retries: a
// retry on a new connection whose handshake times out, after the 3s
// DialTimeout, is not retried; dlock then says it could not record the
// slot as done.) It takes 5s, so it runs with DLOCK_SLOW_FAULTS=1 only
// (see package jobs).
func TestRunOncePerDoneRecordLate(t *testing.T) {
	t.Parallel()
	if os.Getenv("DLOCK_SLOW_FAULTS") != "1" {
		t.Skip("a slow fault test: set DLOCK_SLOW_FAULTS=1 to run it")
	}
	srv := redistest.NewServer(t)
	dir := t.TempDir()
	started, done := filepath.Join(dir, "started"), filepath.Join(dir, "done")
	job := []string{"run", "--once-per", onceEvery, "--key", "late", "--redis", srv.URL()}
	p := startDlock(t, nil, append(job, "--", "sh", "-c", gated, "sh", started, done)...)
	waitUntil(t, "the command to start", func() bool { return exists(started) })
	srv.Pause()
	if err := os.WriteFile(done, nil, 0o600); err != nil { // the command ends
		srv.Resume()
		t.Fatal(err)
	}
	time.Sleep(5 * time.Second) // longer than go-redis's ReadTimeout: the write is sent again
	srv.Resume()
	o := p.wait(t)
	checkCode(t, o, 0)
	if strings.Contains(o.stderr, "could not record") {
		t.Errorf("dlock could not record the slot as done: %s", o.stderr)
	}
	checkCode(t, runDlock(t, nil, append(job, "--", "true")...), 79)
}
