package redistest

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

const (
	// clusterNodeTimeout is the cluster-node-timeout of a Cluster's nodes:
	// a node that does not answer for that long is suspected down, and a
	// replica takes over from a failed primary a second or two later.
	clusterNodeTimeout = 1000 * time.Millisecond
	// maxClusterNodes bounds the processes one NewCluster starts, so that a
	// typo does not start thousands of them.
	maxClusterNodes = 64
	// clusterTimeout bounds how long NewCluster, Failover and WaitFailover
	// wait for the cluster to settle.
	clusterTimeout = 15 * time.Second
)

// clusterArgs are the arguments of every node of a Cluster, before the
// caller's.
var clusterArgs = []string{
	"--cluster-enabled", "yes",
	"--cluster-config-file", "nodes.conf", // in the node's Dir
	"--cluster-node-timeout", fmt.Sprint(clusterNodeTimeout.Milliseconds()),
	// A replica may take over however long ago it last heard from its
	// primary: a test that pauses a replica still gets a failover.
	"--cluster-replica-validity-factor", "0",
	// Replicas stay with the primary they were given, so that a test knows
	// which replica takes over which slots.
	"--cluster-allow-replica-migration", "no",
}

// Cluster is a Redis Cluster of redis-server processes on 127.0.0.1, made by
// [NewCluster]. Its nodes are ordinary Servers: a test kills, pauses and
// restarts them as it would any Server, and the cluster reacts as a real
// one does.
//
// Its methods must be called from the test's goroutine. Those that ask the
// cluster who serves what (Primaries, ReplicasOf, PrimaryOf, PrimaryOfSlot)
// report what the first running node that answers says at that moment,
// which can lag behind a failover in progress: call [Cluster.WaitFailover]
// first.
type Cluster struct {
	t       testing.TB
	servers []*Server          // the primaries as made, then their replicas
	ids     map[*Server]string // node IDs
	byID    map[string]*Server
	// settled is the last view on which every node agreed, for
	// WaitFailover to know what a primary that died served.
	settled *clusterView
}

// NewCluster starts a Redis Cluster of primaries primaries, each with
// replicasPerPrimary replicas, and waits until it is ready: every node
// reports cluster_state:ok and the same map of slots, and every replica
// has copied its primary's (empty) dataset. The slots are split evenly, in
// contiguous ranges, among the primaries in the order of [Cluster.Servers],
// as redis-cli --cluster create splits them: 0-5460, 5461-10922 and
// 10923-16383 for three.
//
// Each node is a Server started with the options for a fast test:
//
//	--cluster-enabled yes --cluster-config-file nodes.conf
//	--cluster-node-timeout 1000 --cluster-replica-validity-factor 0
//	--cluster-allow-replica-migration no
//
// followed by opts, which apply to every node and may override them. The
// cluster's configuration file is in each node's Dir, so a node that is
// restarted rejoins the cluster under the same ID, with an empty dataset: a
// primary restarted before its replica took over has lost its data. A
// primary that is killed is replaced by one of its replicas within about
// three seconds; see [Cluster.WaitFailover]. Automatic failover needs a
// majority of the primaries alive, so it takes at least three primaries.
//
// NewCluster fails the test if primaries < 1, replicasPerPrimary < 0, the
// cluster would have more than 64 nodes, or it is not ready within 15
// seconds. A 3-primary, 3-replica cluster is ready in about two seconds,
// most of which Redis spends waiting before a new primary accepts writes.
// The nodes are stopped when the test ends.
func NewCluster(t testing.TB, primaries, replicasPerPrimary int, opts ...Option) *Cluster {
	t.Helper()
	c, err := newCluster(t, primaries, replicasPerPrimary, opts)
	if err != nil {
		t.Fatalf("%v", err)
	}
	return c
}

// StartCluster starts a Redis Cluster outside of any one test, as
// [NewCluster] does: in TestMain, to share one cluster among a package's
// tests and examples. Unlike NewCluster it returns its error. The caller
// must call stop when done: it kills the nodes, closes the clients made by
// [Cluster.Client] and [Server.Client] and removes the nodes' directories.
//
// The methods of a Cluster from StartCluster that would fail a test panic
// instead, with the same message.
func StartCluster(primaries, replicasPerPrimary int, opts ...Option) (c *Cluster, stop func(), err error) {
	owner := &standalone{}
	c, err = newCluster(owner, primaries, replicasPerPrimary, opts)
	if err != nil {
		owner.stop()
		return nil, nil, err
	}
	return c, owner.stop, nil
}

// checkClusterShape reports an error for a cluster that cannot be made.
func checkClusterShape(primaries, replicasPerPrimary int) error {
	switch {
	case primaries < 1:
		return fmt.Errorf("redistest: NewCluster: %d primaries, want at least 1", primaries)
	case replicasPerPrimary < 0:
		return fmt.Errorf("redistest: NewCluster: %d replicas per primary, want 0 or more", replicasPerPrimary)
	case primaries > maxClusterNodes || replicasPerPrimary >= maxClusterNodes ||
		primaries*(1+replicasPerPrimary) > maxClusterNodes:
		return fmt.Errorf("redistest: NewCluster: %d primaries with %d replicas each is more than %d nodes",
			primaries, replicasPerPrimary, maxClusterNodes)
	}
	return nil
}

// Servers returns every node of the cluster: the primaries as NewCluster
// made them, in slot order, then the replicas of the first primary, those
// of the second, and so on. The order does not change on failovers.
func (c *Cluster) Servers() []*Server {
	return append([]*Server(nil), c.servers...)
}

// Addrs returns the addresses of every node, in the order of
// [Cluster.Servers], for redis.ClusterOptions.Addrs.
func (c *Cluster) Addrs() []string {
	addrs := make([]string, len(c.servers))
	for i, s := range c.servers {
		addrs[i] = s.Addr()
	}
	return addrs
}

// Client returns a new go-redis cluster client for the cluster. Its
// options are the go-redis defaults with Addrs set to [Cluster.Addrs]; each
// function in opts may change them before the client is made. The client
// is closed by a t.Cleanup, which runs before the nodes are killed.
func (c *Cluster) Client(opts ...func(*redis.ClusterOptions)) *redis.ClusterClient {
	c.t.Helper()
	o := &redis.ClusterOptions{Addrs: c.Addrs()}
	for _, opt := range opts {
		opt(o)
	}
	rdb := redis.NewClusterClient(o)
	c.t.Cleanup(func() { _ = rdb.Close() })
	return rdb
}

// Primaries returns the nodes that serve slots, in slot order, as the
// cluster sees them now. A primary that was killed is among them until a
// replica has taken over its slots.
func (c *Cluster) Primaries() []*Server {
	c.t.Helper()
	ranges, _ := c.view("Primaries", nil).coverage()
	var primaries []*Server
	seen := make(map[*Server]bool)
	for _, r := range ranges {
		if s := c.byID[r.owner]; s != nil && !seen[s] {
			seen[s] = true
			primaries = append(primaries, s)
		}
	}
	return primaries
}

// ReplicasOf returns the nodes that replicate primary, in the order of
// [Cluster.Servers], as the cluster sees them now, including replicas that
// are not running.
func (c *Cluster) ReplicasOf(primary *Server) []*Server {
	c.t.Helper()
	id := c.id("ReplicasOf", primary)
	v := c.view("ReplicasOf", nil)
	var replicas []*Server
	for _, s := range c.servers {
		if n := v.nodes[c.ids[s]]; n != nil && !n.primary && n.masterID == id {
			replicas = append(replicas, s)
		}
	}
	return replicas
}

// PrimaryOf returns the node that serves key's slot ([Slot]) now.
func (c *Cluster) PrimaryOf(key string) *Server {
	c.t.Helper()
	return c.PrimaryOfSlot(Slot(key))
}

// PrimaryOfSlot returns the node that serves slot now. It fails the test
// if slot is out of range or no node serves it.
func (c *Cluster) PrimaryOfSlot(slot int) *Server {
	c.t.Helper()
	if slot < 0 || slot >= Slots {
		c.t.Fatalf("redistest: PrimaryOfSlot: slot %d is not in [0, %d)", slot, Slots)
		return nil
	}
	owner := c.byID[c.view("PrimaryOfSlot", nil).ownerOf(slot)]
	if owner == nil {
		c.t.Fatalf("redistest: PrimaryOfSlot: no node serves slot %d", slot)
	}
	return owner
}

// id returns the node ID of s, failing the test if s is not a node of c.
func (c *Cluster) id(method string, s *Server) string {
	c.t.Helper()
	id, ok := c.ids[s]
	if !ok {
		c.t.Fatalf("redistest: %s: %v is not a node of the cluster", method, serverName(s))
	}
	return id
}

// serverName names s in a message.
func serverName(s *Server) string {
	if s == nil {
		return "nil"
	}
	return s.Addr()
}

// view returns the cluster as the first running node other than skip that
// answers sees it, failing the test if none does.
func (c *Cluster) view(method string, skip *Server) *clusterView {
	c.t.Helper()
	a := make(admins)
	defer a.close()
	ctx, cancel := context.WithTimeout(context.Background(), clusterTimeout)
	defer cancel()
	var lastErr error
	for _, s := range c.servers {
		if s == skip || !s.Running() {
			continue
		}
		v, err := nodeView(ctx, a.get(s.Addr()))
		if err == nil {
			return v
		}
		lastErr = err
	}
	c.t.Fatalf("redistest: %s: no node of the cluster answers: %v", method, lastErr)
	return nil
}

// nodeView returns the cluster as the node behind client sees it.
func nodeView(ctx context.Context, client *redis.Client) (*clusterView, error) {
	reply, err := client.ClusterNodes(ctx).Result()
	if err != nil {
		return nil, fmt.Errorf("CLUSTER NODES on %s: %w", client.Options().Addr, err)
	}
	return parseClusterNodes(reply)
}
