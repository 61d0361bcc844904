//go:build unix

package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/dlock-go/dlock/redistest"
)

// fairWaiters returns the number of fair waiters of key that dlock status
// --json reports, or -1 if it fails.
func fairWaiters(t *testing.T, srv *redistest.Server, key string) int {
	t.Helper()
	code, out, _ := runCLI(t, "status", "--json", "--redis", srv.URL(), key)
	var info lockJSON
	if code != exitOK && code != exitNone || json.Unmarshal([]byte(out), &info) != nil {
		return -1
	}
	return info.Waiters
}

// TestRunFairOrder starts dlock run --fair --wait one after the other while
// another holds the lock, each once the one before it is queued: they get
// the lock, and run their commands, in the order they arrived. dlock status
// counts them while they wait.
func TestRunFairOrder(t *testing.T) {
	t.Parallel()
	srv := redistest.NewServer(t)
	dir := t.TempDir()
	started, done, log := filepath.Join(dir, "started"), filepath.Join(dir, "done"), filepath.Join(dir, "log")
	holder := startDlock(t, nil, "run", "--fair", "--key", "job", "--redis", srv.URL(), "--", "sh", "-c", gated, "sh", started, done)
	waitUntil(t, "the holder's command to start", func() bool { return exists(started) })

	names := []string{"first", "second", "third", "fourth", "fifth"}
	var waiters []*dlockProcess
	for i, name := range names {
		waiters = append(waiters, startDlock(t, nil, "run", "--fair", "--wait", "10s", "--key", "job", "--redis", srv.URL(),
			"--", "sh", "-c", `echo "$1" >> "$2"`, "sh", name, log))
		waitUntil(t, name+" to queue", func() bool { return fairWaiters(t, srv, "job") == i+1 })
	}
	code, out, errOut := runCLI(t, "status", "--redis", srv.URL(), "job")
	if code != exitOK || !regexp.MustCompile(`(?m)^waiters: +5$`).MatchString(out) {
		t.Errorf("status with 5 fair waiters = %d, %q, %q; want a line \"fair waiters: 5\"", code, out, errOut)
	}

	if err := os.WriteFile(done, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	checkCode(t, holder.wait(t), 0)
	for _, p := range waiters {
		checkCode(t, p.wait(t), 0)
	}
	data, err := os.ReadFile(log)
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Fields(string(data)); strings.Join(got, " ") != strings.Join(names, " ") {
		t.Errorf("the commands ran in the order %q, want the order of arrival %q", got, names)
	}
	if n := fairWaiters(t, srv, "job"); n != 0 {
		t.Errorf("%d fair waiters left after all ran, want 0", n)
	}
}

// TestRunFairGivesUp checks that a --fair waiter whose --wait runs out
// exits with 75 and leaves the queue at once, not when its lease in the
// queue would run out, and that --fair without --wait does not queue.
func TestRunFairGivesUp(t *testing.T) {
	t.Parallel()
	srv := redistest.NewServer(t)
	dir := t.TempDir()
	started, done, marker := filepath.Join(dir, "started"), filepath.Join(dir, "done"), filepath.Join(dir, "marker")
	holder := startDlock(t, nil, "run", "--key", "job", "--redis", srv.URL(), "--", "sh", "-c", gated, "sh", started, done)
	waitUntil(t, "the holder's command to start", func() bool { return exists(started) })

	o := runDlock(t, nil, "run", "--fair", "--key", "job", "--redis", srv.URL(), "--", "touch", marker)
	checkCode(t, o, 75)
	if n := fairWaiters(t, srv, "job"); n != 0 {
		t.Errorf("--fair without --wait left %d waiters, want 0", n)
	}

	p := startDlock(t, nil, "run", "-v", "--fair", "--wait", "1s", "--key", "job", "--redis", srv.URL(), "--", "touch", marker)
	waitUntil(t, "the waiter to queue", func() bool { return fairWaiters(t, srv, "job") == 1 })
	o = p.wait(t)
	checkCode(t, o, 75)
	// The holder is named, as status shows it.
	if want := regexp.MustCompile(`dlock: waited 1s, and the lock on "job" is still held by \S+ pid \d+ \(sh via dlock run\) \[[0-9a-f]{8}\] for \d+s, ` +
		`or earlier --fair waiters go first; not running "touch `); !want.MatchString(o.stderr) {
		t.Errorf("stderr does not match %s:\n%s", want, o.stderr)
	}
	// dlock closes its Client before it exits, which waits for the leave:
	// its place is gone already, not left to lapse with its lease (2s).
	if n := fairWaiters(t, srv, "job"); n != 0 {
		t.Errorf("%d waiters queued after the one that gave up exited, want 0", n)
	}
	if exists(marker) {
		t.Error("a command ran while another held the lock")
	}
	if err := os.WriteFile(done, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	checkCode(t, holder.wait(t), 0)
}
