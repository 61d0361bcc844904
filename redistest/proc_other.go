//go:build !linux

package redistest

import "syscall"

// sysProcAttr returns nil: only Linux can kill a child when its parent dies.
func sysProcAttr() *syscall.SysProcAttr {
	return nil
}

// waitStopped returns at once: without /proc there is no portable way to
// see that a process is stopped, and the signal is normally delivered
// before the next command reaches the server.
func waitStopped(*process) error {
	return nil
}
