package redistest_test

import (
	"strings"
	"testing"
	"time"

	"github.com/dlock-go/dlock/internal/testenv"
	"github.com/dlock-go/dlock/redistest"
)

func TestReplica(t *testing.T) {
	primary := redistest.NewServer(t)
	mustSet(t, primary.Client(), "before", "1") // copied by the initial sync
	replica := redistest.NewReplica(t, primary)
	if replica.Port() == primary.Port() {
		t.Fatalf("the replica shares the primary's port %d", primary.Port())
	}
	rdb, replicaRDB := primary.Client(), replica.Client()
	ctx := t.Context()

	if got, err := replicaRDB.Get(ctx, "before").Result(); err != nil || got != "1" {
		t.Errorf("replica: GET before = %q, %v; want the value written before NewReplica", got, err)
	}
	setAndWait(t, rdb, "after", "2", 1)
	if got, err := replicaRDB.Get(ctx, "after").Result(); err != nil || got != "2" {
		t.Errorf("replica: GET after = %q, %v; want the value acknowledged by WAIT", got, err)
	}
	if err := replicaRDB.Set(ctx, "k", "v", 0).Err(); err == nil || !strings.HasPrefix(err.Error(), "READONLY") {
		t.Errorf("SET on the replica: %v, want a READONLY error", err)
	}

	// A restarted replica is empty, then copies the dataset again.
	replica.Restart()
	redistest.WaitReplicating(t, replica, primary)
	if got, err := replicaRDB.Get(ctx, "after").Result(); err != nil || got != "2" {
		t.Errorf("restarted replica: GET after = %q, %v; want it copied again", got, err)
	}

	// A restarted primary is empty, and so is its replica once it has
	// copied the new, empty, dataset: replication is no backup.
	primary.Restart()
	redistest.WaitReplicating(t, replica, primary)
	if n, err := replicaRDB.DBSize(ctx).Result(); err != nil || n != 0 {
		t.Errorf("replica of a restarted primary: DBSIZE = %d, %v; want 0", n, err)
	}
	setAndWait(t, rdb, "again", "3", 1)
}

func TestReplicaOfAReplica(t *testing.T) {
	primary := redistest.NewServer(t)
	middle := redistest.NewReplica(t, primary)
	leaf := redistest.NewReplica(t, middle)
	setAndWait(t, primary.Client(), "k", "v", 1)
	// WAIT counts only direct replicas; the leaf gets the write a moment later.
	leafRDB := leaf.Client()
	testenv.Eventually(t, 5*time.Second, "the write to reach the replica of the replica", func() bool {
		return leafRDB.Get(t.Context(), "k").Val() == "v"
	})
}
