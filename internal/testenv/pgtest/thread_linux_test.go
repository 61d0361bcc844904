//go:build linux

package pgtest

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"runtime"
	"syscall"
	"testing"
	"time"

	"github.com/dlock-go/dlock/internal/testenv"
)

// A server outlives the thread that started it: the parent-death signal
// that stops it with its test binary follows the thread that started
// postgres, and Go ends a thread when a goroutine exits while locked to it.
func TestServerOutlivesStartingThread(t *testing.T) {
	s := New(t)
	s.Stop()
	type started struct {
		tid int
		err error
	}
	var st started
	for st.tid == 0 {
		c := make(chan started, 1)
		go func() {
			runtime.LockOSThread() // never unlocked: the thread ends with this goroutine
			if syscall.Gettid() == os.Getpid() {
				// Go parks the main thread rather than end it: try another.
				runtime.UnlockOSThread()
				c <- started{}
				return
			}
			c <- started{syscall.Gettid(), s.Start()}
		}()
		st = <-c
	}
	if st.err != nil {
		t.Fatal(st.err)
	}
	task := fmt.Sprintf("/proc/self/task/%d", st.tid)
	testenv.Eventually(t, 10*time.Second, "the thread that started the server to end", func() bool {
		_, err := os.Stat(task)
		return errors.Is(err, fs.ErrNotExist)
	})
	// The signal is sent as the thread exits, before it is gone from /proc:
	// a server it killed accepts no connection.
	if err := s.command("pg_isready", "-q", "-h", s.dir, "-p", port, "-U", "postgres").Run(); err != nil {
		t.Fatalf("postgres died with the thread that started it: pg_isready: %v", err)
	}
}
