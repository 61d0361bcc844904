//go:build linux

package redistest_test

import (
	"testing"

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
	var (
		srv  *redistest.Server
		stop func()
		err  error
	)
	testenv.OnEndingThread(t, func() { srv, stop, err = redistest.Start() })
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stop)
	// A parent-death signal is sent as the thread exits, before it is gone
	// from /proc: a server it killed cannot answer.
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr(), MaxRetries: -1})
	defer rdb.Close()
	if err := rdb.Ping(t.Context()).Err(); err != nil {
		t.Fatalf("the server died with the thread that asked for it: %v", err)
	}
	if !srv.Running() {
		t.Fatal("the server is not running")
	}
}
