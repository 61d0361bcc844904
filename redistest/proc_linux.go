//go:build linux

package redistest

import (
	"bytes"
	"fmt"
	"os"
	"strconv"
	"syscall"
	"time"
)

// stopTimeout bounds how long Pause waits for the kernel to stop a process.
const stopTimeout = 2 * time.Second

// sysProcAttr asks the kernel to SIGKILL redis-server when the thread that
// started it dies, so that a test binary that crashes, or is killed by
// go test -timeout, leaves no server behind. spawn starts it from a thread
// it keeps until the server exits, so no other thread's end kills it.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}

// waitStopped waits until the kernel reports p as stopped, because a signal
// is delivered asynchronously and a test that pauses a server expects the
// very next command to hang.
func waitStopped(p *process) error {
	path := "/proc/" + strconv.Itoa(p.cmd.Process.Pid) + "/stat"
	deadline := time.Now().Add(stopTimeout)
	for {
		stat, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		// The state follows the command name, which is in parentheses and
		// may itself contain spaces or parentheses.
		if i := bytes.LastIndexByte(stat, ')'); i >= 0 && i+2 < len(stat) {
			if state := stat[i+2]; state == 'T' || state == 't' {
				return nil
			}
		}
		if p.exited() {
			return fmt.Errorf("process %d exited", p.cmd.Process.Pid)
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("process %d did not stop within %v", p.cmd.Process.Pid, stopTimeout)
		}
		time.Sleep(time.Millisecond)
	}
}
