//go:build !linux && !freebsd

package main

import "os/exec"

// tieToParent does nothing where the system has no parent-death signal
// (macOS, the other BSDs, Windows): there a command whose dlock is killed
// with SIGKILL runs on until it ends by itself.
func tieToParent(*exec.Cmd) {}
