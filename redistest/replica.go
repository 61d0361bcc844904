package redistest

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"testing"
)

// NewReplica starts a redis-server on a free 127.0.0.1 port that replicates
// primary (--replicaof 127.0.0.1 PORT), and waits until it has copied the
// primary's dataset and its link to the primary is up, so that what is
// written to the primary from then on reaches the replica. It fails the test
// if the replica does not get there within ten seconds.
//
// Options apply as for [NewServer]. The replica is read-only, as replicas
// are by default, and is stopped when the test ends, like any Server.
//
// Kill and Start work as for any server: a replica started again is empty,
// then copies the dataset again from the server on the primary's port,
// which does not change on the primary's own restarts. Start does not wait
// for that; [WaitReplicating] does. After a failover that promotes another
// server, a replica restarted this way replicates its old primary again
// until Sentinel or Redis Cluster reconfigures it, as happens to a real
// replica that keeps its primary in its configuration file.
func NewReplica(t testing.TB, primary *Server, opts ...Option) *Server {
	t.Helper()
	replica, err := newReplica(t, primary, opts)
	if err != nil {
		t.Fatalf("%v", err)
	}
	return replica
}

// newReplica is NewReplica returning its error.
func newReplica(t testing.TB, primary *Server, opts []Option) (*Server, error) {
	replica, err := startReplica(t, primary, opts)
	if err != nil {
		return nil, err
	}
	return replica, waitReplicating(replica, primary)
}

// startReplica starts a server and makes it a replica of primary, without
// waiting for the first sync. It sends REPLICAOF rather than starting the
// server with --replicaof, because a server connects to a configured primary
// only when its once-a-second replication timer next fires, and REPLICAOF
// connects at once. The argument is then added for later restarts.
func startReplica(t testing.TB, primary *Server, opts []Option) (*Server, error) {
	if primary == nil {
		return nil, errors.New("redistest: NewReplica: nil primary")
	}
	replica, err := newServer(t, opts)
	if err != nil {
		return nil, err
	}
	port := strconv.Itoa(primary.Port())
	c := adminClient(replica.Addr())
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), readyTimeout)
	defer cancel()
	if err := c.ReplicaOf(ctx, host, port).Err(); err != nil {
		return nil, fmt.Errorf("redistest: REPLICAOF %s %s on %s: %w", host, port, replica.Addr(), err)
	}
	replica.args = append([]string{"--replicaof", host, port}, replica.args...)
	return replica, nil
}

// WaitReplicating waits until replica replicates primary with its link up
// and no sync in progress: after NewReplica, after a restart of either, or
// after a failover that made primary the replica's new primary. It fails
// the test if that takes more than ten seconds.
func WaitReplicating(t testing.TB, replica, primary *Server) {
	t.Helper()
	if err := waitReplicating(replica, primary); err != nil {
		t.Fatalf("%v", err)
	}
}

// waitReplicating is WaitReplicating returning its error.
func waitReplicating(replica, primary *Server) error {
	r, p := adminClient(replica.Addr()), adminClient(primary.Addr())
	defer r.Close()
	defer p.Close()
	what := fmt.Sprintf("wait until %s replicates %s", replica.Addr(), primary.Addr())
	err := waitFor(readyTimeout, what, func(ctx context.Context) error {
		return checkReplicating(ctx, r, p)
	})
	if err != nil {
		return fmt.Errorf("%w\nlast lines of %s:\n%s", err, replica.logPath(), replica.LogTail(failureLogLines))
	}
	return nil
}
