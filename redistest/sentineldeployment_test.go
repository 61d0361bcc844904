package redistest_test

import (
	"slices"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/dlock-go/dlock/redistest"
)

func TestSentinelDeploymentKillPrimary(t *testing.T) {
	t.Parallel()
	d := redistest.NewSentinelDeployment(t, "locks")
	logOnFailure(t, d.Sentinels()...)
	servers := d.Servers()
	if d.MasterName() != "locks" || len(servers) != 3 || len(d.Sentinels()) != 3 || len(d.SentinelAddrs()) != 3 {
		t.Fatalf("MasterName %q, %d servers, %d Sentinels, %d Sentinel addresses; want locks, 3, 3, 3",
			d.MasterName(), len(servers), len(d.Sentinels()), len(d.SentinelAddrs()))
	}
	old := d.Primary()
	if old != servers[0] || !slices.Equal(d.Replicas(), servers[1:]) {
		t.Fatalf("Primary() = %s, Replicas() = %v; want the first server, then the others", old.Addr(), d.Replicas())
	}
	rdb := d.FailoverClient()
	setAndWait(t, rdb, "k", "v", 2) // on both replicas, whichever is promoted

	old.Kill()
	start := time.Now()
	primary := d.WaitFailover(old)
	t.Logf("failover after %v", time.Since(start))
	if primary == old || !slices.Contains(servers, primary) {
		t.Fatalf("WaitFailover returned %s, want one of the replicas", primary.Addr())
	}
	if d.Primary() != primary {
		t.Errorf("Primary() = %s after WaitFailover returned %s", d.Primary().Addr(), primary.Addr())
	}
	// The failover client finds the new primary by itself.
	if got := getEventually(t, rdb, "k"); got != "v" {
		t.Errorf("GET through the failover client = %q, want \"v\"", got)
	}
	mustSet(t, rdb, "after", "failover")
	if got := primary.Client().Get(t.Context(), "after").Val(); got != "failover" {
		t.Errorf("the new primary holds %q, want the value set through the failover client", got)
	}

	// The old primary comes back empty, as a primary, until the Sentinels
	// make it a replica of the new one.
	old.Start()
	redistest.WaitReplicating(t, old, primary)
	if got := old.Client().Get(t.Context(), "after").Val(); got != "failover" {
		t.Errorf("the old primary holds %q once a replica, want the new primary's data", got)
	}
}

func TestSentinelDeploymentFailover(t *testing.T) {
	t.Parallel()
	d := redistest.NewSentinelDeployment(t, "mymaster", redistest.WithArgs("--maxmemory-policy", "noeviction"))
	old := d.Primary()
	rdb := d.FailoverClient(func(o *redis.FailoverOptions) { o.DB = 0 })
	setAndWait(t, rdb, "k", "v", 2)

	primary := d.Failover()
	if primary == old {
		t.Fatalf("Failover returned the old primary %s", old.Addr())
	}
	if got := getEventually(t, rdb, "k"); got != "v" {
		t.Errorf("GET through the failover client = %q, want \"v\"", got)
	}
	policy, err := primary.Client().ConfigGet(t.Context(), "maxmemory-policy").Result()
	if err != nil || policy["maxmemory-policy"] != "noeviction" {
		t.Errorf("the new primary has maxmemory-policy %v, %v; want the options' noeviction", policy, err)
	}
}

func TestSentinelDeploymentBadName(t *testing.T) {
	msg := fatalMessage(t, func(tb testing.TB) { redistest.NewSentinelDeployment(tb, "my master") })
	if want := `redistest: NewSentinelDeployment: master name "my master" must be one word`; msg != want {
		t.Errorf("NewSentinelDeployment with a bad name failed with %q, want %q", msg, want)
	}
}
