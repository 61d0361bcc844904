package faults_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/dlock-go/dlock/faults"
	"github.com/dlock-go/dlock/internal/testenv"
	"github.com/dlock-go/dlock/redistest"
)

// A client meets a cut network, then a blackhole. Outside a test, Start
// stands in for New, as redistest.Start does for redistest.NewServer.
func Example() {
	srv, stopServer, err := redistest.Start()
	if err != nil {
		fmt.Println(err)
		return
	}
	defer stopServer()
	p, stopProxy, err := faults.Start(srv.Addr())
	if err != nil {
		fmt.Println(err)
		return
	}
	defer stopProxy() // before stopServer: deferred calls run last first

	ctx := context.Background()
	rdb := p.Client() // timeouts of faults.ClientTimeout, no retries
	fmt.Println("ping:", rdb.Ping(ctx).Val())

	p.Cut()
	err = rdb.Ping(ctx).Err()
	fmt.Println("refused while cut:", errors.Is(err, syscall.ECONNREFUSED))
	p.Restore()
	fmt.Println("ping after Restore:", rdb.Ping(ctx).Val())

	p.Blackhole()
	start := time.Now()
	err = rdb.Ping(ctx).Err()
	var netErr net.Error
	fmt.Println("timed out in the blackhole:", errors.As(err, &netErr) && netErr.Timeout(),
		time.Since(start) >= faults.ClientTimeout)
	p.Clear()
	fmt.Println("ping after Clear:", rdb.Ping(ctx).Val())

	// Output:
	// ping: PONG
	// refused while cut: true
	// ping after Restore: PONG
	// timed out in the blackhole: true true
	// ping after Clear: PONG
}

// The examples below are test functions written as function literals,
// because an Example gets no *testing.T. They have no Output comment, so go
// test compiles them but does not run them; copy a body into a
// func TestXxx(t *testing.T) to use it.

// A test that a command with a deadline gives up on a slow network.
func ExampleNew() {
	testSlowNetwork := func(t *testing.T) {
		srv := redistest.NewServer(t)
		p := faults.New(t, srv.Addr()) // stopped by t.Cleanup
		rdb := p.Client(func(o *redis.Options) {
			o.ReadTimeout = time.Second
			o.ContextTimeoutEnabled = true // deadlines come from ctx
		})

		p.Latency(100*time.Millisecond, 0) // a round trip takes 200ms more
		ctx, cancel := context.WithTimeout(t.Context(), 50*time.Millisecond)
		defer cancel()
		if err := rdb.Ping(ctx).Err(); err == nil {
			t.Fatal("PING beat its deadline on a slow network")
		}

		p.Clear() // closes the connections; go-redis reconnects
		if err := rdb.Ping(t.Context()).Err(); err != nil {
			t.Fatalf("PING after Clear: %v", err)
		}
	}
	_ = testSlowNetwork
}

// A test for a quorum of independent nodes, one of which is cut off the
// network while the others answer.
func ExampleNodes() {
	testQuorum := func(t *testing.T) {
		nodes := faults.Nodes(t, 3)
		nodes[2].Proxy.Cut()

		ok := 0
		for _, node := range nodes {
			if node.Proxy.Client().SetNX(t.Context(), "lock", "me", time.Second).Val() {
				ok++
			}
		}
		if ok != 2 {
			t.Fatalf("%d nodes granted the lock, want 2", ok)
		}
	}
	_ = testQuorum
}

// A test of the ambiguous failure: the command ran on the server, but the
// client saw only a timeout.
func ExampleProxy_BlackholeReplies() {
	testLostReply := func(t *testing.T) {
		srv := redistest.NewServer(t)
		p := faults.New(t, srv.Addr())
		rdb := p.Client()
		// Open the connection first: on a new one, go-redis's handshake
		// (HELLO) would time out, and SETNX would never be sent.
		if err := rdb.Ping(t.Context()).Err(); err != nil {
			t.Fatal(err)
		}

		remove := p.BlackholeReplies()
		if err := rdb.SetNX(t.Context(), "lock", "me", time.Minute).Err(); err == nil {
			t.Fatal("SETNX succeeded with its reply dropped")
		}
		remove()

		// The client does not know it, but it holds the lock.
		if holder := srv.Client().Get(t.Context(), "lock").Val(); holder != "me" {
			t.Fatalf("the lock is held by %q, want me", holder)
		}
	}
	_ = testLostReply
}

// docCode is the code of the package's doc (doc.go), as written, so that
// it compiles; TestDocCodeIsTested checks that the two agree.
func docCode(t *testing.T) {
	srv := redistest.NewServer(t)
	p := faults.New(t, srv.Addr())
	rdb := p.Client() // go-redis, short timeouts, no retries

	p.Cut()     // every connection closed, new ones refused
	p.Restore() // connections accepted again

	remove := p.Latency(50*time.Millisecond, 0) // each direction 50ms slower
	remove()

	p.Blackhole() // connections open, nothing passes: commands time out
	p.Clear()     // every fault removed, every connection closed
	_ = rdb
}

func TestDocCodeIsTested(t *testing.T) {
	_ = docCode
	testenv.DocCodeIsTested(t, 1)
}
