//go:build linux

package main

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"

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
				return err == nil && pid > 0 || exited(p.cmd.Process.Pid)
			})
			if pid <= 0 {
				o := p.wait(t)
				t.Fatalf("dlock %s exited before its command started: code %d, stderr %q", verb, o.code, o.stderr)
			}
			t.Cleanup(func() { _ = syscall.Kill(pid, syscall.SIGKILL) }) // before the fix, it ran on
			if err := p.cmd.Process.Signal(syscall.SIGKILL); err != nil {
				t.Fatal(err)
			}
			checkCode(t, p.wait(t), -1) // killed
			// The kernel sends the signal as dlock exits, before its
			// parent can reap it.
			waitUntil(t, fmt.Sprintf("the command (pid %d) to end after dlock was killed", pid), func() bool { return !alive(pid) })
		})
	}
}

// TestCommandOutlivesStartingThread starts a command from a goroutine
// locked to its OS thread that ends without unlocking it, so that Go ends
// the thread: Linux sends the parent-death signal when the thread that
// started a child ends, but startAndWait starts it from a thread of its
// own, kept until the command exits, so the command runs on.
func TestCommandOutlivesStartingThread(t *testing.T) {
	t.Parallel()
	cmd := exec.Command("sleep", "30")
	tieToParent(cmd)
	exited := make(chan *os.ProcessState, 1)
	type started struct {
		tid int
		err error
	}
	startedc := make(chan started, 1)
	var s started
	for s.tid == 0 {
		go func() {
			runtime.LockOSThread() // never unlocked: the thread ends with this goroutine
			if syscall.Gettid() == os.Getpid() {
				// The main thread never ends: Go parks it instead. Try
				// another goroutine, most likely on another thread.
				runtime.UnlockOSThread()
				startedc <- started{}
				return
			}
			startedc <- started{syscall.Gettid(), startAndWait(cmd, exited)}
		}()
		s = <-startedc
	}
	if s.err != nil {
		t.Fatal(s.err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-exited
	})
	// The thread ends as the goroutine returns; had the thread started the
	// command, the kernel would kill the command then.
	var died *os.ProcessState
	waitUntil(t, "the goroutine's thread to end", func() bool {
		select {
		case died = <-exited:
			return true
		default:
		}
		_, err := os.Stat(fmt.Sprintf("/proc/self/task/%d", s.tid))
		return os.IsNotExist(err)
	})
	if died == nil && !alive(cmd.Process.Pid) {
		died = <-exited
	}
	if died != nil {
		exited <- died // for the cleanup
		t.Fatalf("the command died with the thread of the goroutine that asked to start it: %v", died)
	}
}

// exited reports whether the child process pid has exited (a zombie its
// parent has not reaped yet, or gone).
func exited(pid int) bool {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return true
	}
	// The state follows the command's name, which is in parentheses.
	i := bytes.LastIndexByte(data, ')')
	return i > 0 && i+2 < len(data) && data[i+2] == 'Z'
}
