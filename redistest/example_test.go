package redistest_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/dlock-go/dlock/internal/testenv"
	"github.com/dlock-go/dlock/redistest"
)

// Most examples below are test functions written as function literals,
// because an Example gets no *testing.T. They have no Output comment, so
// go test compiles them but does not run them; copy a body into a
// func TestXxx(t *testing.T) to use it. ExampleStartCluster needs no test,
// and runs.

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

// A test of code that runs against Redis Cluster, through a failover that
// keeps what one replica acknowledged.
func ExampleNewCluster() {
	testFailover := func(t *testing.T) {
		cluster := redistest.NewCluster(t, 3, 1) // 3 primaries, 1 replica each
		rdb := cluster.Client()                  // a *redis.ClusterClient, closed by t.Cleanup

		const key = "lock:{order:42}"
		primary := cluster.PrimaryOf(key)
		// WAIT is about the writes of its own connection: hold one.
		conn := primary.Client().Conn()
		defer conn.Close()
		conn.Set(t.Context(), key, "token", 0)
		if n, err := conn.Wait(t.Context(), 1, time.Second).Result(); err != nil || n != 1 {
			t.Fatalf("WAIT 1 = %d, %v", n, err)
		}

		primary.Kill()
		promoted := cluster.WaitFailover(primary) // about three seconds
		if got := rdb.Get(t.Context(), key).Val(); got != "token" {
			t.Fatalf("%s serves %q, want \"token\"", promoted.Addr(), got)
		}
	}
	_ = testFailover
}

// A cluster shared by the tests and examples of a package, started in
// TestMain; Failover moves a primary's slots to its replica.
func ExampleStartCluster() {
	cluster, stop, err := redistest.StartCluster(3, 1)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer stop() // kills the nodes and closes the clients

	ctx := context.Background()
	rdb := cluster.Client()
	const key = "{user:7}:cart"
	if err := rdb.Set(ctx, key, "3 items", 0).Err(); err != nil {
		fmt.Println(err)
		return
	}
	primaries := cluster.Primaries()
	fmt.Printf("%d primaries, %d nodes\n", len(primaries), len(cluster.Servers()))
	fmt.Printf("slot %d is on primary %d\n", redistest.Slot(key), slices.Index(primaries, cluster.PrimaryOf(key)))

	replica := cluster.ReplicasOf(cluster.PrimaryOf(key))[0]
	if cluster.Failover(cluster.PrimaryOf(key)) == replica && cluster.PrimaryOf(key) == replica {
		fmt.Println("after Failover, its replica serves it")
	}
	cart, err := rdb.Get(ctx, key).Result()
	fmt.Println(cart, err)
	// Output:
	// 3 primaries, 6 nodes
	// slot 2780 is on primary 0
	// after Failover, its replica serves it
	// 3 items <nil>
}

// A test that a client follows a Sentinel failover.
func ExampleNewSentinelDeployment() {
	testFailover := func(t *testing.T) {
		d := redistest.NewSentinelDeployment(t, "mymaster") // 1 primary, 2 replicas, 3 Sentinels
		rdb := d.FailoverClient()                           // finds the primary through the Sentinels
		if err := rdb.Set(t.Context(), "k", "v", 0).Err(); err != nil {
			t.Fatal(err)
		}

		old := d.Primary()
		old.Kill()
		primary := d.WaitFailover(old) // about four seconds
		if primary == old {
			t.Fatal("no failover")
		}
		// Writes that had not reached the promoted replica are lost.
		if err := rdb.Set(t.Context(), "k", "v2", 0).Err(); err != nil {
			t.Fatalf("SET after the failover: %v", err)
		}
	}
	_ = testFailover
}

// A test against a primary and its replica.
func ExampleNewReplica() {
	testReadYourWrites := func(t *testing.T) {
		primary := redistest.NewServer(t)
		replica := redistest.NewReplica(t, primary) // in sync when it returns

		primary.Client().Set(t.Context(), "k", "v", 0)
		// Replication is asynchronous: a read from the replica may not see
		// the write yet, unless the writer waited for it with WAIT.
		_ = replica.Client().Get(t.Context(), "k").Val()
	}
	_ = testReadYourWrites
}

// TestCounter is the test the package's doc (doc.go) shows, as written;
// TestDocCodeIsTested checks that the two agree.
func TestCounter(t *testing.T) {
	srv := redistest.NewServer(t)
	rdb := srv.Client()
	if err := rdb.Incr(t.Context(), "n").Err(); err != nil {
		t.Fatal(err)
	}
}

func TestDocCodeIsTested(t *testing.T) {
	testenv.DocCodeIsTested(t, 1)
}
