package redistest

import (
	"context"
	"errors"
	"fmt"
	"net"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

const (
	// deploymentReplicas and deploymentSentinels are the size of a
	// SentinelDeployment.
	deploymentReplicas  = 2
	deploymentSentinels = 3
	// sentinelTimeout bounds how long a SentinelDeployment waits for its
	// Sentinels to be ready or to finish a failover.
	sentinelTimeout = 15 * time.Second
)

// deploymentTimings are the timings of a SentinelDeployment's Sentinels.
// Two seconds before a primary is thought down, not one: a Sentinel that
// has just switched to a new primary opens a new link to it, and thinks it
// down if the first PING is not answered within that time, which happened
// on a loaded machine, and then fails over once more at once, counting the
// other Sentinels' votes about the old primary.
var deploymentTimings = sentinelTimings{quorum: 2, downAfter: 2 * time.Second, failoverTimeout: 2 * time.Second}

// SentinelDeployment is a primary with two replicas, watched by three
// Sentinels, all redis-server processes on 127.0.0.1, made by
// [NewSentinelDeployment]. Its servers and Sentinels are ordinary Servers:
// a test kills, pauses and restarts them as it would any Server, and the
// Sentinels react as they do in production.
//
// Its methods must be called from the test's goroutine.
type SentinelDeployment struct {
	t          testing.TB
	masterName string
	servers    []*Server // the first primary, then the replicas
	sentinels  []*Server
}

// NewSentinelDeployment starts a primary, two replicas of it and three
// Sentinels that monitor it under masterName with a quorum of two, and
// waits until every Sentinel knows the replicas and the other Sentinels,
// so that a failover can start at once. Options apply to the primary and
// the replicas, as for [NewServer]; the Sentinels get none.
//
// The Sentinels think the primary down after two seconds without an answer
// (down-after-milliseconds 2000), and give a failover two seconds
// (failover-timeout 2000): a killed primary is replaced in about four
// seconds; see [SentinelDeployment.WaitFailover]. They also exchange hello
// messages every half second and ask the servers for INFO every second
// (SENTINEL DEBUG publish-period 500 info-period 1000, rather than every
// two and every ten seconds), so that they find each other at once; a
// Sentinel that is restarted goes back to the default periods. Everything is stopped when
// the test ends. NewSentinelDeployment fails the test if masterName is not
// one word or the deployment is not ready within 15 seconds; it is usually
// ready in well under one.
func NewSentinelDeployment(t testing.TB, masterName string, opts ...Option) *SentinelDeployment {
	t.Helper()
	d, err := newSentinelDeployment(t, masterName, opts)
	if err != nil {
		t.Fatalf("%v", err)
	}
	return d
}

// newSentinelDeployment is NewSentinelDeployment returning its error.
func newSentinelDeployment(t testing.TB, masterName string, opts []Option) (*SentinelDeployment, error) {
	if err := checkMasterName(masterName); err != nil {
		return nil, fmt.Errorf("redistest: NewSentinelDeployment: %w", err)
	}
	primary, err := newServer(t, opts)
	if err != nil {
		return nil, err
	}
	d := &SentinelDeployment{t: t, masterName: masterName, servers: []*Server{primary}}
	for range deploymentReplicas {
		replica, err := startReplica(t, primary, opts)
		if err != nil {
			return nil, err
		}
		d.servers = append(d.servers, replica)
	}
	for _, replica := range d.servers[1:] {
		if err := waitReplicating(replica, primary); err != nil {
			return nil, err
		}
	}
	a := make(admins)
	defer a.close()
	var peers []peerSentinel
	for range deploymentSentinels {
		// Each Sentinel is told about the ones before it, and introduces
		// itself to them with a hello message as soon as it is up.
		conf := sentinelConfig(masterName, primary, deploymentTimings, peers)
		sentinel, err := newServer(t, []Option{asSentinel(conf)})
		if err != nil {
			return nil, err
		}
		d.sentinels = append(d.sentinels, sentinel)
		id, err := quicken(a.get(sentinel.Addr()))
		if err != nil {
			return nil, err
		}
		peers = append(peers, peerSentinel{sentinel.Port(), id})
	}
	err = waitFor(sentinelTimeout, "NewSentinelDeployment: wait until the Sentinels are ready", func(ctx context.Context) error {
		for _, sentinel := range d.sentinels {
			if err := d.checkSentinelReady(ctx, a.get(sentinel.Addr())); err != nil {
				return err
			}
		}
		return nil
	})
	return d, err
}

// quicken shortens the periods of the Sentinel behind client, which
// SENTINEL DEBUG sets but a configuration file cannot, and returns the
// Sentinel's ID. Hello messages every half second rather than every two let
// Sentinels find each other at once; they also cut the time before a
// Sentinel turns an old primary that is running again into a replica (four
// publish periods, after it has seen its role in an INFO, which it asks
// for every second rather than every ten).
func quicken(client *redis.Client) (id string, err error) {
	ctx, cancel := context.WithTimeout(context.Background(), readyTimeout)
	defer cancel()
	addr := client.Options().Addr
	if err := client.Do(ctx, "SENTINEL", "DEBUG", "publish-period", 500, "info-period", 1000).Err(); err != nil {
		return "", fmt.Errorf("redistest: SENTINEL DEBUG on %s: %w", addr, err)
	}
	id, err = client.Do(ctx, "SENTINEL", "MYID").Text()
	if err != nil {
		return "", fmt.Errorf("redistest: SENTINEL MYID on %s: %w", addr, err)
	}
	return id, nil
}

// checkSentinelReady reports an error unless the Sentinel behind client
// sees the primary up, with both replicas connected and in sync, and knows
// enough other Sentinels to authorize a failover.
func (d *SentinelDeployment) checkSentinelReady(ctx context.Context, client *redis.Client) error {
	addr := client.Options().Addr
	reply, err := client.Do(ctx, "SENTINEL", "MASTER", d.masterName).Result()
	if err != nil {
		return fmt.Errorf("SENTINEL MASTER on %s: %w", addr, err)
	}
	master := pairs(reply)
	want := fmt.Sprint(deploymentSentinels - 1)
	if master["flags"] != "master" || master["num-other-sentinels"] != want {
		return fmt.Errorf("sentinel %s sees the primary with flags %s and %s other Sentinels, want master and %s",
			addr, master["flags"], master["num-other-sentinels"], want)
	}
	replicas, err := client.Do(ctx, "SENTINEL", "REPLICAS", d.masterName).Slice()
	if err != nil {
		return fmt.Errorf("SENTINEL REPLICAS on %s: %w", addr, err)
	}
	ok := 0
	for _, r := range replicas {
		if fields := pairs(r); fields["flags"] == "slave" && fields["master-link-status"] == "ok" {
			ok++
		}
	}
	if ok != deploymentReplicas {
		return fmt.Errorf("sentinel %s sees %d of %d replicas in sync", addr, ok, deploymentReplicas)
	}
	if err := client.Do(ctx, "SENTINEL", "CKQUORUM", d.masterName).Err(); err != nil {
		return fmt.Errorf("SENTINEL CKQUORUM on %s: %w", addr, err)
	}
	return nil
}

// pairs turns a reply that is a flat list of names and values, or a map,
// into a map of strings.
func pairs(reply any) map[string]string {
	m := make(map[string]string)
	switch r := reply.(type) {
	case []any:
		for i := 0; i+1 < len(r); i += 2 {
			m[fmt.Sprint(r[i])] = fmt.Sprint(r[i+1])
		}
	case map[any]any:
		for k, v := range r {
			m[fmt.Sprint(k)] = fmt.Sprint(v)
		}
	}
	return m
}

// MasterName returns the name under which the Sentinels monitor the
// primary, for redis.FailoverOptions.MasterName.
func (d *SentinelDeployment) MasterName() string { return d.masterName }

// SentinelAddrs returns the Sentinels' addresses, for
// redis.FailoverOptions.SentinelAddrs.
func (d *SentinelDeployment) SentinelAddrs() []string {
	addrs := make([]string, len(d.sentinels))
	for i, s := range d.sentinels {
		addrs[i] = s.Addr()
	}
	return addrs
}

// Sentinels returns the three Sentinels.
func (d *SentinelDeployment) Sentinels() []*Server {
	return append([]*Server(nil), d.sentinels...)
}

// Servers returns the primary and the replicas: the first primary, then
// the replicas, in an order that does not change on failovers.
func (d *SentinelDeployment) Servers() []*Server {
	return append([]*Server(nil), d.servers...)
}

// FailoverClient returns a new go-redis client that finds the primary
// through the Sentinels. Its options are the go-redis defaults with
// MasterName and SentinelAddrs set; each function in opts may change them
// before the client is made. The client is closed by a t.Cleanup, which
// runs before the servers are killed.
func (d *SentinelDeployment) FailoverClient(opts ...func(*redis.FailoverOptions)) *redis.Client {
	d.t.Helper()
	o := &redis.FailoverOptions{MasterName: d.masterName, SentinelAddrs: d.SentinelAddrs()}
	for _, opt := range opts {
		opt(o)
	}
	rdb := redis.NewFailoverClient(o)
	d.t.Cleanup(func() { _ = rdb.Close() })
	return rdb
}

// Primary returns the server that the first running Sentinel that answers
// reports as the primary now. That can lag behind a failover in progress:
// call [SentinelDeployment.WaitFailover] first.
func (d *SentinelDeployment) Primary() *Server {
	d.t.Helper()
	a := make(admins)
	defer a.close()
	ctx, cancel := context.WithTimeout(context.Background(), sentinelTimeout)
	defer cancel()
	lastErr := errors.New("no Sentinel is running")
	for _, sentinel := range d.sentinels {
		if !sentinel.Running() {
			continue
		}
		primary, err := d.reportedPrimary(ctx, a.get(sentinel.Addr()))
		if err == nil {
			return primary
		}
		lastErr = err
	}
	d.t.Fatalf("redistest: Primary: %v", lastErr)
	return nil
}

// Replicas returns the servers other than [SentinelDeployment.Primary], in
// the order of [SentinelDeployment.Servers].
func (d *SentinelDeployment) Replicas() []*Server {
	d.t.Helper()
	primary := d.Primary()
	var replicas []*Server
	for _, s := range d.servers {
		if s != primary {
			replicas = append(replicas, s)
		}
	}
	return replicas
}

// reportedPrimary returns the server that the Sentinel behind client
// reports as the primary.
func (d *SentinelDeployment) reportedPrimary(ctx context.Context, client *redis.Client) (*Server, error) {
	addr, err := client.Do(ctx, "SENTINEL", "GET-MASTER-ADDR-BY-NAME", d.masterName).StringSlice()
	if err != nil {
		return nil, fmt.Errorf("SENTINEL GET-MASTER-ADDR-BY-NAME on %s: %w", client.Options().Addr, err)
	}
	if len(addr) != 2 {
		return nil, fmt.Errorf("SENTINEL GET-MASTER-ADDR-BY-NAME on %s: reply %q", client.Options().Addr, addr)
	}
	for _, s := range d.servers {
		if s.Addr() == net.JoinHostPort(addr[0], addr[1]) {
			return s, nil
		}
	}
	return nil, fmt.Errorf("sentinel %s reports a primary at %s:%s, which is none of the deployment's servers",
		client.Options().Addr, addr[0], addr[1])
}
