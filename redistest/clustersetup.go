package redistest

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"
)

// newCluster is NewCluster returning its error.
func newCluster(t testing.TB, primaries, replicasPerPrimary int, opts []Option) (*Cluster, error) {
	if err := checkClusterShape(primaries, replicasPerPrimary); err != nil {
		return nil, err
	}
	opts = append([]Option{WithArgs(clusterArgs...)}, opts...)
	n := primaries * (1 + replicasPerPrimary)
	c := &Cluster{t: t, ids: make(map[*Server]string, n), byID: make(map[string]*Server, n)}
	// The primaries start first: Redis keeps a new primary out of service
	// for two seconds after it started, and that runs while the rest is set up.
	for range n {
		s, err := newServer(t, opts)
		if err != nil {
			return nil, err
		}
		c.servers = append(c.servers, s)
	}
	a := make(admins)
	defer a.close()
	ctx, cancel := context.WithTimeout(context.Background(), clusterTimeout)
	defer cancel()
	plan, err := c.introduce(ctx, a, primaries)
	if err != nil {
		return nil, fmt.Errorf("redistest: NewCluster: %w", err)
	}
	// CLUSTER REPLICATE needs the replica to know its primary.
	err = waitFor(clusterTimeout, "NewCluster: wait until the nodes know each other", func(ctx context.Context) error {
		return c.checkAcquainted(ctx, a)
	})
	if err != nil {
		return nil, err
	}
	if err := c.replicate(ctx, a, plan); err != nil {
		return nil, fmt.Errorf("redistest: NewCluster: %w", err)
	}
	_, err = c.waitSettled(a, "NewCluster: wait until the cluster is ready", nil, func(v *clusterView) error {
		if v.key != plan.key {
			return fmt.Errorf("the cluster is\n%s\nnot yet as planned:\n%s", c.describe(v), c.describe(plan))
		}
		return nil
	})
	return c, err
}

// introduce gives the first primaries servers their slots and has every
// server meet the others, and returns the view the cluster should settle on
// once the other servers replicate them.
func (c *Cluster) introduce(ctx context.Context, a admins, primaries int) (*clusterView, error) {
	busPorts := make([]string, len(c.servers))
	for i, s := range c.servers {
		client := a.get(s.Addr())
		id, err := client.ClusterMyID(ctx).Result()
		if err != nil {
			return nil, fmt.Errorf("CLUSTER MYID on %s: %w", s.Addr(), err)
		}
		c.ids[s], c.byID[id] = id, s
		if busPorts[i], err = clusterBusPort(ctx, s, client); err != nil {
			return nil, err
		}
	}
	plan := c.plan(primaries)
	for i, s := range c.servers {
		client := a.get(s.Addr())
		// Distinct epochs spare the cluster resolving collisions, one
		// at a time, before it can agree on anything.
		if err := client.Do(ctx, "CLUSTER", "SET-CONFIG-EPOCH", i+1).Err(); err != nil {
			return nil, fmt.Errorf("CLUSTER SET-CONFIG-EPOCH on %s: %w", s.Addr(), err)
		}
		for _, r := range plan.nodes[c.ids[s]].slots {
			if err := client.ClusterAddSlotsRange(ctx, r.first, r.last).Err(); err != nil {
				return nil, fmt.Errorf("CLUSTER ADDSLOTSRANGE %d %d on %s: %w", r.first, r.last, s.Addr(), err)
			}
		}
	}
	// Every pair meets once, directly: no waiting for gossip to spread.
	for i, s := range c.servers {
		for j := i + 1; j < len(c.servers); j++ {
			other := c.servers[j]
			err := a.get(s.Addr()).Do(ctx, "CLUSTER", "MEET", host, other.Port(), busPorts[j]).Err()
			if err != nil {
				return nil, fmt.Errorf("CLUSTER MEET %s on %s: %w", other.Addr(), s.Addr(), err)
			}
		}
	}
	return plan, nil
}

// replicate makes the servers that plan says are replicas replicate their
// primary.
func (c *Cluster) replicate(ctx context.Context, a admins, plan *clusterView) error {
	for _, s := range c.servers {
		if masterID := plan.nodes[c.ids[s]].masterID; masterID != "" {
			if err := a.get(s.Addr()).ClusterReplicate(ctx, masterID).Err(); err != nil {
				return fmt.Errorf("CLUSTER REPLICATE %s on %s: %w", c.byID[masterID].Addr(), s.Addr(), err)
			}
		}
	}
	return nil
}

// plan returns the view of a cluster whose first primaries servers serve
// the slots in equal ranges and the others replicate them, in turn.
func (c *Cluster) plan(primaries int) *clusterView {
	v := &clusterView{nodes: make(map[string]*clusterNode)}
	for i, r := range splitSlots(primaries) {
		id := c.ids[c.servers[i]]
		v.nodes[id] = &clusterNode{id: id, primary: true, slots: []slotRange{r}}
	}
	replicasPerPrimary := len(c.servers)/primaries - 1
	for i, s := range c.servers[primaries:] {
		id := c.ids[s]
		v.nodes[id] = &clusterNode{id: id, masterID: c.ids[c.servers[i/replicasPerPrimary]]}
	}
	v.key = v.canonical()
	return v
}

// clusterBusPort returns the cluster bus port of s, for CLUSTER MEET: the
// one the package chose, one set by WithArgs, or Redis's default.
func clusterBusPort(ctx context.Context, s *Server, client *redis.Client) (string, error) {
	conf, err := client.ConfigGet(ctx, "cluster-port").Result()
	if err != nil {
		return "", fmt.Errorf("CONFIG GET cluster-port on %s: %w", s.Addr(), err)
	}
	if port := conf["cluster-port"]; port != "" && port != "0" {
		return port, nil
	}
	return strconv.Itoa(s.Port() + 10000), nil
}

// checkAcquainted reports an error unless every node knows every other
// one, with its handshake done.
func (c *Cluster) checkAcquainted(ctx context.Context, a admins) error {
	for _, s := range c.servers {
		v, err := nodeView(ctx, a.get(s.Addr()))
		if err != nil {
			return err
		}
		if err := c.checkMembers(s, v); err != nil {
			return err
		}
	}
	return nil
}

// checkMembers reports an error unless the view from s holds exactly the
// cluster's nodes, each fully known.
func (c *Cluster) checkMembers(s *Server, v *clusterView) error {
	known := 0
	for id, n := range v.nodes {
		if c.byID[id] != nil && !n.pending {
			known++
		}
	}
	if known != len(v.nodes) || known != len(c.servers) {
		return fmt.Errorf("%s knows %d of the %d nodes (and %d nodes being met)",
			s.Addr(), known, len(c.servers), len(v.nodes)-known)
	}
	return nil
}

// describe returns v as text, with addresses instead of node IDs.
func (c *Cluster) describe(v *clusterView) string {
	var b strings.Builder
	for _, s := range c.servers {
		n := v.nodes[c.ids[s]]
		switch {
		case n == nil:
			fmt.Fprintf(&b, "\t%s unknown\n", s.Addr())
		case n.primary:
			fmt.Fprintf(&b, "\t%s primary", s.Addr())
			for _, r := range n.slots {
				fmt.Fprintf(&b, " %d-%d", r.first, r.last)
			}
			b.WriteByte('\n')
		default:
			fmt.Fprintf(&b, "\t%s replica of %s\n", s.Addr(), serverName(c.byID[n.masterID]))
		}
	}
	return strings.TrimSuffix(b.String(), "\n")
}
