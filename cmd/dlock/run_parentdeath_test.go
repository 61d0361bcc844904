//go:build linux

package main

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/dlock-go/dlock/redistest"
)

// TestCommandDiesWithDlock kills dlock run and dlock elect with SIGKILL
// while their command runs: the command, in a process group of its own,
// must die with them rather than run on without the lock (the parent-death
// signal).
func TestCommandDiesWithDlock(t *testing.T) {
	t.Parallel()
	srv := redistest.NewServer(t)
	for _, verb := range []string{"run", "elect"} {
		t.Run(verb, func(t *testing.T) {
			t.Parallel()
			pidFile := filepath.Join(t.TempDir(), "pid")
			p := startDlock(t, nil, verb, "--key", "orphan-"+verb, "--redis", srv.URL(), "--",
				"sh", "-c", `echo $$ > "$1.tmp" && mv "$1.tmp" "$1" && exec sleep 60`, "sh", pidFile)
			var pid int
			waitUntil(t, "the command to start", func() bool {
				data, err := os.ReadFile(pidFile)
				pid, _ = strconv.Atoi(strings.TrimSpace(string(data)))
				return err == nil && pid > 0
			})
			t.Cleanup(func() { _ = syscall.Kill(pid, syscall.SIGKILL) }) // before the fix, it ran on
			if err := p.cmd.Process.Signal(syscall.SIGKILL); err != nil {
				t.Fatal(err)
			}
			checkCode(t, p.wait(t), -1) // killed
			// The kernel sends the signal as dlock exits, before its
			// parent can reap it: a second is plenty for the command to go.
			for i := 0; ; i++ {
				if !alive(pid) {
					break
				}
				if i == 100 {
					t.Fatalf("the command (pid %d) still runs a second after dlock was killed", pid)
				}
				time.Sleep(10 * time.Millisecond)
			}
		})
	}
}
