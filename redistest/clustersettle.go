package redistest

import (
	"context"
	"errors"
	"fmt"
)

// waitSettled waits until the cluster has settled (see checkSettled),
// leaving out skip, and want, if not nil, accepts its view. It records and
// returns that view.
func (c *Cluster) waitSettled(a admins, what string, skip *Server, want func(*clusterView) error) (*clusterView, error) {
	var settled *clusterView
	err := waitFor(clusterTimeout, what, func(ctx context.Context) error {
		v, err := c.checkSettled(ctx, a, skip)
		if err == nil && want != nil {
			err = want(v)
		}
		if err != nil {
			return err
		}
		settled = v
		return nil
	})
	if err != nil {
		return nil, err
	}
	c.settled = settled
	return settled, nil
}

// checkSettled returns the cluster's view if it has settled, or an error
// that says why not. A cluster has settled when every running node but skip
// reports cluster_state:ok and the same view of the cluster, in which every
// slot is served by a running node other than skip, and every running
// replica other than skip has copied the dataset of its primary, which
// lists it as online. Nodes that are not running are left out, because a
// test that killed one expects the others to carry on.
func (c *Cluster) checkSettled(ctx context.Context, a admins, skip *Server) (*clusterView, error) {
	var first *clusterView
	var firstNode *Server
	for _, s := range c.servers {
		if s == skip || !s.Running() {
			continue
		}
		client := a.get(s.Addr())
		info, err := client.ClusterInfo(ctx).Result()
		if err != nil {
			return nil, fmt.Errorf("CLUSTER INFO on %s: %w", s.Addr(), err)
		}
		if state := infoFields(info)["cluster_state"]; state != "ok" {
			return nil, fmt.Errorf("%s reports cluster_state:%s", s.Addr(), state)
		}
		v, err := nodeView(ctx, client)
		if err != nil {
			return nil, err
		}
		if err := c.checkMembers(s, v); err != nil {
			return nil, err
		}
		if first == nil {
			first, firstNode = v, s
		} else if v.key != first.key {
			return nil, fmt.Errorf("%s sees\n%s\nbut %s sees\n%s",
				firstNode.Addr(), c.describe(first), s.Addr(), c.describe(v))
		}
	}
	if first == nil {
		return nil, errors.New("no node is running")
	}
	if err := c.checkServed(first, skip); err != nil {
		return nil, err
	}
	if err := c.checkReplicas(ctx, a, first, skip); err != nil {
		return nil, err
	}
	return first, nil
}

// checkServed reports an error unless every slot is served by a running
// node other than skip.
func (c *Cluster) checkServed(v *clusterView, skip *Server) error {
	ranges, unserved := v.coverage()
	if unserved >= 0 {
		return fmt.Errorf("no node serves slot %d", unserved)
	}
	for _, r := range ranges {
		if s := c.byID[r.owner]; s == skip || !s.Running() {
			return fmt.Errorf("slots %d-%d are still served by %s, which is down", r.first, r.last, s.Addr())
		}
	}
	return nil
}

// checkReplicas reports an error unless every running replica other than
// skip replicates a running primary, with its link up and in sync.
func (c *Cluster) checkReplicas(ctx context.Context, a admins, v *clusterView, skip *Server) error {
	for _, s := range c.servers {
		n := v.nodes[c.ids[s]]
		if n.primary || s == skip || !s.Running() {
			continue
		}
		primary := c.byID[n.masterID]
		if primary == nil || primary == skip || !primary.Running() {
			return fmt.Errorf("%s replicates %s, which is down", s.Addr(), serverName(primary))
		}
		if err := checkReplicating(ctx, a.get(s.Addr()), a.get(primary.Addr())); err != nil {
			return err
		}
	}
	return nil
}
