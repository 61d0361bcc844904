//go:build unix

package redistest

import (
	"os"
	"syscall"
)

// stopProcess sends SIGSTOP to p.
func stopProcess(p *os.Process) error {
	return p.Signal(syscall.SIGSTOP)
}

// continueProcess sends SIGCONT to p.
func continueProcess(p *os.Process) error {
	return p.Signal(syscall.SIGCONT)
}
