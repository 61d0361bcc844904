//go:build linux

package testenv

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"runtime"
	"syscall"
	"testing"
	"time"
)

// OnEndingThread runs fn on a goroutine locked to an OS thread that Go ends
// when fn returns (never the main thread, which Go parks instead), and
// waits until the thread is gone: for tests of what the end of a thread
// does, such as the parent-death signal of a child it started. fn runs
// outside the test's goroutine, so it must not call t.Fatal; it reports
// through what it captures.
func OnEndingThread(t testing.TB, fn func()) {
	t.Helper()
	tid := 0
	for tid == 0 {
		c := make(chan int, 1)
		go func() {
			runtime.LockOSThread() // never unlocked: the thread ends with this goroutine
			if syscall.Gettid() == os.Getpid() {
				runtime.UnlockOSThread()
				c <- 0 // the main thread: try another
				return
			}
			fn()
			c <- syscall.Gettid()
		}()
		tid = <-c
	}
	task := fmt.Sprintf("/proc/self/task/%d", tid)
	Eventually(t, 10*time.Second, "thread "+task+" to end", func() bool {
		_, err := os.Stat(task)
		return errors.Is(err, fs.ErrNotExist)
	})
}
