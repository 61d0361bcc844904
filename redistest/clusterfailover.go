package redistest

import (
	"context"
	"fmt"
)

// Failover makes a replica of primary take over its slots, as an operator
// does before maintenance, and returns that replica, the new primary. It
// sends CLUSTER FAILOVER to the first running replica of primary in the
// order of [Cluster.Servers]: the replica catches up with primary, which
// holds writes meanwhile, then takes over, so no write is lost. Failover
// waits until every node agrees on the new map of slots and the old
// primary has become a replica of the new one, in sync.
//
// It fails the test if primary serves no slots, is not running (see
// [Cluster.WaitFailover] for a primary that was killed), has no running
// replica, or the cluster has not settled within 15 seconds.
func (c *Cluster) Failover(primary *Server) *Server {
	c.t.Helper()
	id := c.id("Failover", primary)
	if !primary.Running() {
		c.t.Fatalf("redistest: Failover: %s is not running; use WaitFailover after killing a primary", primary.Addr())
		return nil
	}
	v := c.view("Failover", nil)
	n := v.nodes[id]
	if n == nil || !n.primary || len(n.slots) == 0 {
		c.t.Fatalf("redistest: Failover: %s serves no slots:\n%s", primary.Addr(), c.describe(v))
		return nil
	}
	var replica *Server
	for _, s := range c.servers {
		if r := v.nodes[c.ids[s]]; r != nil && r.masterID == id && s.Running() {
			replica = s
			break
		}
	}
	if replica == nil {
		c.t.Fatalf("redistest: Failover: %s has no running replica:\n%s", primary.Addr(), c.describe(v))
		return nil
	}

	a := make(admins)
	defer a.close()
	ctx, cancel := context.WithTimeout(context.Background(), clusterTimeout)
	defer cancel()
	if err := a.get(replica.Addr()).ClusterFailover(ctx).Err(); err != nil {
		c.t.Fatalf("redistest: Failover: CLUSTER FAILOVER on %s: %v", replica.Addr(), err)
		return nil
	}
	slot := n.slots[0].first
	what := fmt.Sprintf("Failover: wait until %s has taken over from %s", replica.Addr(), primary.Addr())
	_, err := c.waitSettled(a, what, nil, func(v *clusterView) error {
		if owner := c.byID[v.ownerOf(slot)]; owner != replica {
			return fmt.Errorf("slot %d is still served by %s", slot, serverName(owner))
		}
		return nil
	})
	if err != nil {
		c.t.Fatalf("%v", err)
	}
	return replica
}

// WaitFailover waits until the cluster has replaced old, a primary that a
// test killed or paused, and returns the replica that took over its slots.
// Redis Cluster does that by itself: the other nodes find old unreachable
// after cluster-node-timeout (one second), and one of its replicas is
// elected to take over, about three seconds in all. WaitFailover returns
// when every running node but old reports cluster_state:ok and agrees on
// the new map of slots, in which every slot is served by a running node,
// and every running replica is in sync.
//
// It fails the test if old did not serve slots when the cluster last
// settled, or the cluster has not settled within 15 seconds, as happens
// when old had no replica, or when fewer than half of the primaries are
// left to elect one. A killed old that is started again rejoins as a
// replica of the node that took over.
func (c *Cluster) WaitFailover(old *Server) *Server {
	c.t.Helper()
	id := c.id("WaitFailover", old)
	var slots []slotRange
	if n := c.view("WaitFailover", old).nodes[id]; n != nil && n.primary {
		slots = n.slots
	}
	if len(slots) == 0 && c.settled != nil {
		// The failover may be over already.
		if n := c.settled.nodes[id]; n != nil && n.primary {
			slots = n.slots
		}
	}
	if len(slots) == 0 {
		c.t.Fatalf("redistest: WaitFailover: %s is not a primary that serves slots", old.Addr())
		return nil
	}

	a := make(admins)
	defer a.close()
	what := fmt.Sprintf("WaitFailover: wait until a replica has taken over from %s", old.Addr())
	v, err := c.waitSettled(a, what, old, nil)
	if err != nil {
		c.t.Fatalf("%v", err)
		return nil
	}
	return c.byID[v.ownerOf(slots[0].first)]
}
