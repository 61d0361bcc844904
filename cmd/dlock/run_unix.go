//go:build unix

package main

import (
	"os/exec"
	"syscall"
)

// ownProcessGroup makes cmd start in a new process group, so that a signal
// to the group reaches the command and every process it starts, and the
// signals of dlock's terminal reach only dlock, which passes them on.
func ownProcessGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
}

// signalGroup sends sig to the process group led by pid.
func signalGroup(pid int, sig syscall.Signal) error {
	return syscall.Kill(-pid, sig)
}
