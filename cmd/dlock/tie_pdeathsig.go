//go:build linux || freebsd

package main

import (
	"os/exec"
	"syscall"
)

// tieToParent makes the kernel send SIGKILL to cmd's process when dlock
// dies, whatever kills dlock (SIGKILL, the OOM killer): the command must
// not run on without the lock, beside the next holder's copy. It is the
// parent-death signal (prctl PR_SET_PDEATHSIG on Linux, procctl
// PROC_PDEATHSIG_CTL on FreeBSD); cmd must be started by startAndWait,
// which keeps the thread that starts it alive while it runs. Only cmd's own
// process gets the signal: what it started in the background runs on unless
// it exits with it.
func tieToParent(cmd *exec.Cmd) {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Pdeathsig = syscall.SIGKILL
}
