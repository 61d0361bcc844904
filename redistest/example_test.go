package redistest_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/dlock-go/dlock/redistest"
)

// The examples below are test functions written as function literals,
// because an Example gets no *testing.T. They have no Output comment, so
// go test compiles them but does not run them; copy a body into a
// func TestXxx(t *testing.T) to use it.

// A test that needs one real Redis server.
func ExampleNewServer() {
	testCounter := func(t *testing.T) {
		srv := redistest.NewServer(t) // stopped by t.Cleanup
		rdb := srv.Client()           // closed by t.Cleanup, before the server stops

		n, err := rdb.Incr(t.Context(), "visits").Result()
		if err != nil || n != 1 {
			t.Fatalf("INCR = %d, %v; want 1", n, err)
		}
	}
	_ = testCounter
}

// A test for a quorum of independent servers, as Redlock uses, where one
// node is down.
func ExampleNewServers() {
	testQuorum := func(t *testing.T) {
		nodes := redistest.NewServers(t, 3, redistest.WithArgs("--maxmemory-policy", "noeviction"))
		nodes[2].Kill()

		ok := 0
		for _, node := range nodes {
			if node.Client().SetNX(t.Context(), "lock", "me", time.Second).Val() {
				ok++
			}
		}
		if ok != 2 {
			t.Fatalf("%d nodes granted the lock, want 2", ok)
		}
	}
	_ = testQuorum
}

// A test that a client gives up on a server that hangs, then recovers.
func ExampleServer_Pause() {
	testTimeout := func(t *testing.T) {
		srv := redistest.NewServer(t)
		rdb := srv.Client(func(o *redis.Options) {
			o.ContextTimeoutEnabled = true // deadlines come from ctx
			o.MaxRetries = -1
		})

		srv.Pause() // SIGSTOP: connections are accepted but never answered
		ctx, cancel := context.WithTimeout(t.Context(), 200*time.Millisecond)
		defer cancel()
		if err := rdb.Ping(ctx).Err(); err == nil {
			t.Fatal("PING on a paused server succeeded")
		}

		srv.Resume() // SIGCONT
		if err := rdb.Ping(t.Context()).Err(); err != nil {
			t.Fatalf("PING after Resume: %v", err)
		}
	}
	_ = testTimeout
}

// A test that data written before a crash is gone after the restart.
func ExampleServer_Restart() {
	testCrash := func(t *testing.T) {
		srv := redistest.NewServer(t)
		rdb := srv.Client()
		if err := rdb.Set(t.Context(), "k", "v", 0).Err(); err != nil {
			t.Fatal(err)
		}

		srv.Restart() // SIGKILL, then a new empty server on the same port

		if err := rdb.Get(t.Context(), "k").Err(); !errors.Is(err, redis.Nil) {
			// The end of the server's log explains a server-side failure.
			t.Fatalf("GET after Restart: %v, want redis.Nil\n%s", err, srv.LogTail(20))
		}
	}
	_ = testCrash
}
