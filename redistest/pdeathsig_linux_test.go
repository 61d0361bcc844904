//go:build linux

package redistest_test

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"runtime"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/dlock-go/dlock/internal/testenv"
	"github.com/dlock-go/dlock/redistest"
)

// A server outlives the thread that asked for it. The parent-death signal,
// which stops a server with its test binary, follows the thread that
// started redis-server; Go ends a thread when a goroutine exits while
// locked to it, as some tests do on purpose (cmd/dlock's
// TestCommandOutlivesStartingThread), and a server started from that thread
// died with it.
func TestServerOutlivesStartingThread(t *testing.T) {
	type started struct {
		srv  *redistest.Server
		stop func()
		tid  int
		err  error
	}
	var s started
	for s.tid == 0 {
		c := make(chan started, 1)
		go func() {
			runtime.LockOSThread() // never unlocked: the thread ends with this goroutine
			if syscall.Gettid() == os.Getpid() {
				// Go parks the main thread rather than end it: try another.
				runtime.UnlockOSThread()
				c <- started{}
				return
			}
			srv, stop, err := redistest.Start()
			c <- started{srv, stop, syscall.Gettid(), err}
		}()
		s = <-c
	}
	if s.err != nil {
		t.Fatal(s.err)
	}
	t.Cleanup(s.stop)
	task := fmt.Sprintf("/proc/self/task/%d", s.tid)
	testenv.Eventually(t, 10*time.Second, "the thread that asked for the server to end", func() bool {
		_, err := os.Stat(task)
		return errors.Is(err, fs.ErrNotExist)
	})
	// A parent-death signal is sent as the thread exits, before it is gone
	// from /proc: a server it killed cannot answer.
	rdb := redis.NewClient(&redis.Options{Addr: s.srv.Addr(), MaxRetries: -1})
	defer rdb.Close()
	if err := rdb.Ping(t.Context()).Err(); err != nil {
		t.Fatalf("the server died with the thread that asked for it: %v", err)
	}
	if !s.srv.Running() {
		t.Fatal("the server is not running")
	}
}
