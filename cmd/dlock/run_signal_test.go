//go:build unix

package main

import (
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/dlock-go/dlock/redistest"
)

// TestRunForwardsSignals sends signals to dlock while its command runs: the
// command gets them, dlock waits for it, exits with its status and releases
// the lock.
func TestRunForwardsSignals(t *testing.T) {
	t.Parallel()
	srv := redistest.NewServer(t)
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP} {
		name := strings.TrimPrefix(signalName(sig), "SIG")
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			if signal.Ignored(sig) {
				// As under nohup: dlock keeps it ignored, by design (see
				// notIgnored), so there is nothing to forward.
				t.Skipf("%s is ignored by the process that started the tests", signalName(sig))
			}
			dir := t.TempDir()
			ready, got := filepath.Join(dir, "ready"), filepath.Join(dir, "got")
			// A background command of sh ignores SIGINT: the trap kills it.
			script := fmt.Sprintf(`trap 'echo got-%s > "$2"; kill $! 2>/dev/null; exit 3' %s; sleep 30 & touch "$1"; wait`, name, name)
			p := startDlock(t, nil, "run", "--key", "job-"+name, "--redis", srv.URL(), "--", "sh", "-c", script, "sh", ready, got)
			waitUntil(t, "the command to start", func() bool { return exists(ready) })
			if err := p.cmd.Process.Signal(sig); err != nil {
				t.Fatal(err)
			}
			checkCode(t, p.wait(t), 3)
			if data, _ := os.ReadFile(got); string(data) != "got-"+name+"\n" {
				t.Errorf("the command's trap wrote %q, want got-%s", data, name)
			}
			if n := srv.Client().Exists(t.Context(), "job-"+name).Val(); n != 0 {
				t.Error("the lock was not released")
			}
		})
	}
}

// TestRunSignalWhileWaiting sends SIGTERM to dlock while it waits for the
// lock: it stops waiting and exits with 128+15, and the command never runs.
func TestRunSignalWhileWaiting(t *testing.T) {
	t.Parallel()
	srv := redistest.NewServer(t)
	rdb := srv.Client()
	rdb.Set(t.Context(), "job", "another holder", 30*time.Second)
	marker := filepath.Join(t.TempDir(), "marker")
	p := startDlock(t, nil, "run", "--wait", "30s", "--key", "job", "--redis", srv.URL(), "--", "touch", marker)
	// dlock handles signals before it connects to Redis.
	waitUntil(t, "dlock to connect", func() bool {
		return strings.Count(rdb.ClientList(t.Context()).Val(), "\n") >= 2
	})
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	o := p.wait(t)
	checkCode(t, o, 128+15)
	if o.took >= 30*time.Second {
		t.Errorf("took %v: it waited out --wait instead of stopping on the signal", o.took)
	}
	if exists(marker) {
		t.Error("the command ran")
	}
}
