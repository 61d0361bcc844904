//go:build linux

package pgtest

import "syscall"

// sysProcAttr runs a command as cred (if not nil), and asks the kernel to
// SIGKILL it when the thread that started it dies, so that a test binary
// that crashes leaves no server behind. Start starts the server from a
// thread it keeps until the server exits.
func sysProcAttr(cred *syscall.Credential) *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Credential: cred, Pdeathsig: syscall.SIGKILL}
}
