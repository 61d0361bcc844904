//go:build unix && !linux

package pgtest

import "syscall"

// sysProcAttr runs a command as cred (if not nil).
func sysProcAttr(cred *syscall.Credential) *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Credential: cred}
}
