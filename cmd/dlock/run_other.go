//go:build !unix

package main

import (
	"os"
	"os/exec"
	"syscall"
)

// ownProcessGroup does nothing where there are no Unix process groups.
func ownProcessGroup(*exec.Cmd) {}

// signalGroup signals the process pid only, where there are no Unix process
// groups. Most systems other than Unix can only kill it.
func signalGroup(pid int, sig syscall.Signal) error {
	p, err := os.FindProcess(pid)
	if err != nil {
		return err
	}
	if sig == syscall.SIGKILL {
		return p.Kill()
	}
	return p.Signal(sig)
}
