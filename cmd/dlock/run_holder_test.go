//go:build unix

package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"testing"

	"github.com/dlock-go/dlock/redistest"
)

// TestRunNamesHolder: dlock run and dlock elect hold their locks under a
// name that says what they run, with dlock's pid, and a dlock run that
// finds the lock taken names the holder.
func TestRunNamesHolder(t *testing.T) {
	t.Parallel()
	srv := redistest.NewServer(t)
	dir := t.TempDir()
	started, done := filepath.Join(dir, "started"), filepath.Join(dir, "done")
	holder := startDlock(t, nil, "run", "--key", "job", "--redis", srv.URL(), "--", "sh", "-c", gated, "sh", started, done)
	waitUntil(t, "the holder's command to start", func() bool { return exists(started) })
	pid := strconv.Itoa(holder.cmd.Process.Pid)

	_, out, _ := runCLI(t, "status", "--redis", srv.URL(), "job")
	if want := regexp.MustCompile(`holder name: +\S+ pid ` + pid + ` \(sh via dlock run\)\n`); !want.MatchString(out) {
		t.Errorf("status = %q, want it to match %s", out, want)
	}

	o := runDlock(t, nil, "run", "-v", "--key", "job", "--redis", srv.URL(), "--", "true")
	checkCode(t, o, 75)
	if want := regexp.MustCompile(`dlock: the lock on "job" is held by \S+ pid ` + pid + ` \(sh via dlock run\) \[[0-9a-f]{8}\] for \d+s; not running "true"`); !want.MatchString(o.stderr) {
		t.Errorf("stderr = %q, want it to match %s", o.stderr, want)
	}
	if err := os.WriteFile(done, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	checkCode(t, holder.wait(t), 0)

	elected := filepath.Join(dir, "elected")
	leader := startDlock(t, nil, "elect", "--key", "svc", "--redis", srv.URL(), "--", "sh", "-c", gated, "sh", elected, done+"2")
	waitUntil(t, "the leader's command to start", func() bool { return exists(elected) })
	_, out, _ = runCLI(t, "status", "--redis", srv.URL(), "svc")
	if want := regexp.MustCompile(`holder name: +\S+ pid ` + strconv.Itoa(leader.cmd.Process.Pid) + ` \(sh via dlock elect\)\n`); !want.MatchString(out) {
		t.Errorf("status of the election = %q, want it to match %s", out, want)
	}
	if err := os.WriteFile(done+"2", nil, 0o600); err != nil {
		t.Fatal(err)
	}
	checkCode(t, leader.wait(t), 0)
}
