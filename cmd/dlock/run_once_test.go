//go:build unix

package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dlock-go/dlock/redistest"
)

// onceEvery is the --once-per of the tests: ten years, so that no test
// runs across the boundary of two slots (a multiple of
// the period), whatever the time of day.
const onceEvery = "87600h"

// TestRunOncePer runs the same job four times in one slot: the first runs
// the command, the others exit 79 without running it, or with
// --conflict-exit-code's status when it is given.
func TestRunOncePer(t *testing.T) {
	t.Parallel()
	srv := redistest.NewServer(t)
	log := filepath.Join(t.TempDir(), "log")
	job := []string{"run", "--once-per", onceEvery, "--key", "report", "--redis", srv.URL()}
	command := []string{"--", "sh", "-c", `echo "$DLOCK_KEY $DLOCK_SLOT" >> "$1"`, "sh", log}

	checkCode(t, runDlock(t, nil, append(job, command...)...), 0)
	for range 2 {
		o := runDlock(t, nil, append(job, command...)...)
		checkCode(t, o, 79)
		if o.stderr != "" || o.stdout != "" {
			t.Errorf("a skipped slot printed something without -v:\nstdout: %s\nstderr: %s", o.stdout, o.stderr)
		}
	}
	custom := append(append([]string{}, job...), "--conflict-exit-code", "0")
	checkCode(t, runDlock(t, nil, append(custom, command...)...), 0)

	data, err := os.ReadFile(log)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")
	if len(lines) != 1 || !strings.HasPrefix(lines[0], "report ") || !strings.HasSuffix(lines[0], "Z") {
		t.Errorf("the command ran %d times, want once, with DLOCK_KEY and DLOCK_SLOT; its log:\n%s", len(lines), data)
	}
}

// TestRunOncePerRunningElsewhere checks that while one host runs the slot,
// another exits 79 at once, and says why with -v.
func TestRunOncePerRunningElsewhere(t *testing.T) {
	t.Parallel()
	srv := redistest.NewServer(t)
	dir := t.TempDir()
	started, done, marker := filepath.Join(dir, "started"), filepath.Join(dir, "done"), filepath.Join(dir, "marker")
	job := []string{"run", "--once-per", onceEvery, "--key", "sync", "--redis", srv.URL()}
	first := startDlock(t, nil, append(job, "--", "sh", "-c", gated, "sh", started, done)...)
	waitUntil(t, "the first command to start", func() bool { return exists(started) })

	o := runDlock(t, nil, append(job, "-v", "--", "touch", marker)...)
	checkCode(t, o, 79)
	if !strings.Contains(o.stderr, `dlock: "sync" runs elsewhere in slot `) {
		t.Errorf("stderr = %q, want it to say the job runs elsewhere", o.stderr)
	}
	if err := os.WriteFile(done, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	checkCode(t, first.wait(t), 0)

	o = runDlock(t, nil, append(job, "-v", "--", "touch", marker)...)
	checkCode(t, o, 79)
	if !strings.Contains(o.stderr, `dlock: "sync" ran in slot `) || !strings.Contains(o.stderr, " already; not running ") {
		t.Errorf("stderr = %q, want it to say the slot is done", o.stderr)
	}
	if exists(marker) {
		t.Error("a second command ran in the slot")
	}
}

// TestRunOncePerFailed checks that a failed command's status is dlock's,
// and that the slot is not run again (one attempt).
func TestRunOncePerFailed(t *testing.T) {
	t.Parallel()
	srv := redistest.NewServer(t)
	marker := filepath.Join(t.TempDir(), "marker")
	job := []string{"run", "--once-per", onceEvery, "--key", "flaky", "--redis", srv.URL()}

	checkCode(t, runDlock(t, nil, append(job, "--", "sh", "-c", "exit 3")...), 3)
	o := runDlock(t, nil, append(job, "-v", "--", "touch", marker)...)
	checkCode(t, o, 79)
	if !strings.Contains(o.stderr, `failed in slot `) {
		t.Errorf("stderr = %q, want it to say the slot failed", o.stderr)
	}
	if exists(marker) {
		t.Error("the failed slot ran again")
	}
}

// TestRunOncePerLeaseLost deletes the lease of a running slot: dlock
// terminates the command and exits 76, and the slot is not done.
func TestRunOncePerLeaseLost(t *testing.T) {
	t.Parallel()
	srv := redistest.NewServer(t)
	slotFile := filepath.Join(t.TempDir(), "slot")
	p := startDlock(t, nil, "run", "--once-per", onceEvery, "--ttl", "1s", "--key", "long", "--redis", srv.URL(),
		"--", "sh", "-c", `echo "$DLOCK_SLOT" > "$1.tmp" && mv "$1.tmp" "$1"; sleep 30 & wait`, "sh", slotFile)
	waitUntil(t, "the command to start", func() bool { return exists(slotFile) })
	slot, err := os.ReadFile(slotFile)
	if err != nil {
		t.Fatal(err)
	}
	key := "dlock:job:long@" + strings.TrimSpace(string(slot)) + "/run"
	if n, err := srv.Client().Del(t.Context(), key).Result(); err != nil || n != 1 {
		t.Fatalf("DEL %s: %d, %v; want 1", key, n, err)
	}
	o := p.wait(t)
	checkCode(t, o, 76)
	if !strings.Contains(o.stderr, `dlock: lost the lease of "long" in slot `) || !strings.Contains(o.stderr, "; terminating it\n") {
		t.Errorf("stderr = %q, want it to say the lease was lost", o.stderr)
	}
	if n := srv.Client().Exists(t.Context(), "dlock:job:long@"+strings.TrimSpace(string(slot))+"/done").Val(); n != 0 {
		t.Error("a slot whose lease was lost is recorded as done")
	}
}
