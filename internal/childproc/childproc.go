// Package childproc starts a child process that the kernel ties to the
// thread that started it. A parent-death signal (Pdeathsig on Linux) is
// sent when the thread that started the child ends, not when the process
// does, and Go ends a thread when a goroutine exits while locked to it:
// Start keeps the starting thread until the child has exited, so that no
// other goroutine's end kills the child.
//
// It is dlock's machinery for its test servers (redistest, pgtest). It
// uses only the standard library.
package childproc

import (
	"os/exec"
	"runtime"
)

// Start starts cmd from a goroutine locked to its OS thread, which it keeps
// until cmd has exited; then it calls exited with the error of cmd.Wait,
// on that goroutine. It returns once cmd has started, with the error of
// cmd.Start, in which case exited is not called. Nothing else may call
// cmd.Wait.
func Start(cmd *exec.Cmd, exited func(error)) error {
	started := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread() // cmd has exited: the thread may serve others
		if err := cmd.Start(); err != nil {
			started <- err
			return
		}
		started <- nil
		exited(cmd.Wait())
	}()
	return <-started
}
