//go:build unix

package main

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/dlock-go/dlock/redistest"
)

// TestRunLockDeleted deletes the lock's key under a running command: dlock
// notices at its next renewal, terminates the command's whole process group,
// and exits with 76.
func TestRunLockDeleted(t *testing.T) {
	t.Parallel()
	srv := redistest.NewServer(t)
	pidFile := filepath.Join(t.TempDir(), "pid")
	p := startDlock(t, nil, "run", "--ttl", "1s", "--key", "job", "--redis", srv.URL(),
		"--", "sh", "-c", `sleep 30 & echo $! > "$1"; wait`, "sh", pidFile)
	waitUntil(t, "the command to start", func() bool { return exists(pidFile) })
	if err := srv.Client().Del(t.Context(), "job").Err(); err != nil {
		t.Fatal(err)
	}
	deleted := time.Now()

	o := p.wait(t)
	checkCode(t, o, 76)
	if took := time.Since(deleted); took >= 30*time.Second {
		t.Errorf("took %v after the key was deleted to end: the command ran its course, the loss was not acted on", took)
	}
	want := `dlock: lost the lock on "job" while "sh -c sleep 30 & echo $! > \"$1\"; wait sh /`
	if !strings.HasPrefix(o.stderr, want) || !strings.Contains(o.stderr, "; terminating it\n") {
		t.Errorf("stderr = %q, want %q...; terminating it", o.stderr, want)
	}
	data, err := os.ReadFile(pidFile)
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(data)))
	if err != nil {
		t.Fatal(err)
	}
	waitUntil(t, "the command's background sleep to be terminated", func() bool { return !alive(pid) })
}

// alive reports whether process pid runs: it exists and is not a zombie
// waiting for a parent (perhaps a container's init) to reap it.
func alive(pid int) bool {
	if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
		return false
	}
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return true // no /proc: kill said it exists
	}
	i := bytes.LastIndexByte(stat, ')') // after the command name, which may hold anything
	return i < 0 || i+2 >= len(stat) || stat[i+2] != 'Z'
}

// TestRunRedisPaused pauses Redis under a running command, longer than the
// ttl: dlock cannot renew the lock, gives it up when its validity has passed,
// and exits with 76 soon after.
func TestRunRedisPaused(t *testing.T) {
	t.Parallel()
	srv := redistest.NewServer(t)
	rdb := srv.Client()
	p := startDlock(t, nil, "run", "--ttl", "1s", "--key", "job", "--redis", srv.URL(), "--", "sleep", "30")
	waitUntil(t, "the lock", func() bool { return rdb.Exists(t.Context(), "job").Val() == 1 })
	srv.Pause()
	paused := time.Now()
	o := p.wait(t)
	took := time.Since(paused)
	srv.Resume()

	checkCode(t, o, 76)
	if took > 2500*time.Millisecond {
		t.Errorf("took %v after Redis was paused to end, want under the ttl (1s) and a little", took)
	}
	// How it was lost is the library's to say; "lock lost" and the key are
	// not said twice.
	want := `dlock: lost the lock on "job" while "sleep 30" was running: `
	if !strings.HasPrefix(o.stderr, want) || !strings.HasSuffix(o.stderr, "; terminating it\n") || strings.Contains(o.stderr, "lock lost") {
		t.Errorf("stderr = %q, want %q...; terminating it", o.stderr, want)
	}
}

// TestRunGrace checks that a command that ignores SIGTERM gets SIGKILL
// --grace after the lock was lost.
func TestRunGrace(t *testing.T) {
	t.Parallel()
	srv := redistest.NewServer(t)
	ready := filepath.Join(t.TempDir(), "ready")
	p := startDlock(t, nil, "run", "--ttl", "1s", "--grace", "300ms", "--key", "job", "--redis", srv.URL(),
		"--", "sh", "-c", `trap "" TERM; touch "$1"; sleep 30`, "sh", ready)
	waitUntil(t, "the command to start", func() bool { return exists(ready) })
	srv.Client().Del(t.Context(), "job")
	o := p.wait(t)
	checkCode(t, o, 76)
	if !strings.Contains(o.stderr, "did not exit within --grace 300ms of SIGTERM; killing it") {
		t.Errorf("stderr does not say the command was killed:\n%s", o.stderr)
	}
}

// TestRunLockLostUnderQuickCommand deletes the lock (as dlock release
// --force does) under a command that ends before the next renewal: dlock
// finds the lock gone when it releases it, or keeps it for --min-hold,
// says so, and exits with 76 although the command succeeded.
func TestRunLockLostUnderQuickCommand(t *testing.T) {
	t.Parallel()
	srv := redistest.NewServer(t)
	for _, extra := range [][]string{nil, {"--min-hold", "1m"}} {
		t.Run(strings.Join(append([]string{"flags"}, extra...), " "), func(t *testing.T) {
			t.Parallel()
			key := "quick" + strings.Join(extra, "")
			dir := t.TempDir()
			ready, proceed := filepath.Join(dir, "ready"), filepath.Join(dir, "go")
			args := append([]string{"run", "--key", key, "--redis", srv.URL()}, extra...)
			args = append(args, "--", "sh", "-c", `touch "$1"; while [ ! -e "$2" ]; do sleep 0.02; done`, "sh", ready, proceed)
			p := startDlock(t, nil, args...)
			waitUntil(t, "the command to start", func() bool { return exists(ready) })
			if code, _, stderr := runCLI(t, "release", "--force", "--redis", srv.URL(), key); code != 0 {
				t.Fatalf("release --force = %d: %s", code, stderr)
			}
			if err := os.WriteFile(proceed, nil, 0o600); err != nil {
				t.Fatal(err)
			}
			o := p.wait(t)
			checkCode(t, o, 76)
			if want := fmt.Sprintf("dlock: the lock on %q was lost before", key); !strings.HasPrefix(o.stderr, want) ||
				!strings.Contains(o.stderr, "(it exited with status 0)") {
				t.Errorf("stderr = %q, want %q... (it exited with status 0)", o.stderr, want)
			}
		})
	}
}
