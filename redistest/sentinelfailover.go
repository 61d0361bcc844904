package redistest

import (
	"context"
	"errors"
	"fmt"
	"slices"
)

// Failover makes the Sentinels promote a replica now (SENTINEL FAILOVER,
// sent to the first running Sentinel), as an operator does before
// maintenance, and waits for the result as [SentinelDeployment.WaitFailover]
// does. It returns the new primary. Unlike a Redis Cluster manual failover,
// Sentinel does not make the primary wait for its replicas first: writes
// that had not reached the promoted replica are lost.
func (d *SentinelDeployment) Failover() *Server {
	d.t.Helper()
	old := d.Primary()
	a := make(admins)
	defer a.close()
	ctx, cancel := context.WithTimeout(context.Background(), sentinelTimeout)
	defer cancel()
	err := errors.New("no Sentinel is running")
	for _, sentinel := range d.sentinels {
		if sentinel.Running() {
			err = a.get(sentinel.Addr()).Do(ctx, "SENTINEL", "FAILOVER", d.masterName).Err()
			if err != nil {
				err = fmt.Errorf("SENTINEL FAILOVER on %s: %w", sentinel.Addr(), err)
			}
			break
		}
	}
	if err != nil {
		d.t.Fatalf("redistest: Failover: %v", err)
		return nil
	}
	primary, err := d.waitFailover(a, old, "Failover")
	if err != nil {
		d.t.Fatalf("%v", err)
	}
	return primary
}

// WaitFailover waits until the Sentinels have replaced old, a primary that
// a test killed or paused (or that [SentinelDeployment.Failover] replaced),
// and returns the new primary. It returns when every running Sentinel
// reports the same primary other than old, that server says it is a
// primary, and the other running replicas, old aside, replicate it in sync.
//
// A killed primary is replaced in about four seconds: the Sentinels find
// it down after two seconds, agree, elect one of them, which promotes a
// replica. If old is running, or started again, the Sentinels make it a
// replica of the new primary about two seconds later; until then it is a
// second primary, without the writes made since, as in production.
// [WaitReplicating] waits for that. WaitFailover
// fails the test if old is not one of the deployment's servers or the
// failover has not happened within 15 seconds.
func (d *SentinelDeployment) WaitFailover(old *Server) *Server {
	d.t.Helper()
	if !slices.Contains(d.servers, old) {
		d.t.Fatalf("redistest: WaitFailover: %s is not a server of the deployment", serverName(old))
		return nil
	}
	a := make(admins)
	defer a.close()
	primary, err := d.waitFailover(a, old, "WaitFailover")
	if err != nil {
		d.t.Fatalf("%v", err)
	}
	return primary
}

// waitFailover waits until checkFailedOver finds that old was replaced.
func (d *SentinelDeployment) waitFailover(a admins, old *Server, method string) (*Server, error) {
	var primary *Server
	what := fmt.Sprintf("%s: wait until the Sentinels have replaced %s", method, old.Addr())
	err := waitFor(sentinelTimeout, what, func(ctx context.Context) error {
		var err error
		primary, err = d.checkFailedOver(ctx, a, old)
		return err
	})
	return primary, err
}

// checkFailedOver returns the new primary if the running Sentinels agree on
// one other than old, it says it is one, and the running replicas other than
// old replicate it in sync. Otherwise it says what is not done yet.
func (d *SentinelDeployment) checkFailedOver(ctx context.Context, a admins, old *Server) (*Server, error) {
	var primary *Server
	for _, sentinel := range d.sentinels {
		if !sentinel.Running() {
			continue
		}
		reported, err := d.reportedPrimary(ctx, a.get(sentinel.Addr()))
		switch {
		case err != nil:
			return nil, err
		case reported == old:
			return nil, fmt.Errorf("sentinel %s still reports %s as the primary", sentinel.Addr(), old.Addr())
		case primary != nil && reported != primary:
			return nil, fmt.Errorf("the Sentinels report %s and %s as the primary", primary.Addr(), reported.Addr())
		}
		primary = reported
	}
	if primary == nil {
		return nil, errors.New("no Sentinel is running")
	}
	info, err := replicationInfo(ctx, a.get(primary.Addr()))
	if err != nil {
		return nil, err
	}
	if info["role"] != "master" {
		return nil, fmt.Errorf("the new primary %s still has role %s", primary.Addr(), info["role"])
	}
	for _, s := range d.servers {
		if s == primary || s == old || !s.Running() {
			continue
		}
		if err := checkReplicating(ctx, a.get(s.Addr()), a.get(primary.Addr())); err != nil {
			return nil, err
		}
	}
	return primary, nil
}
