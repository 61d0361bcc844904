package redistest

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// sentinelTimings are the settings of a Sentinel for one primary.
type sentinelTimings struct {
	quorum int // Sentinels that must find the primary down
	// downAfter is how long the primary may not answer before a Sentinel
	// thinks it down (down-after-milliseconds).
	downAfter time.Duration
	// failoverTimeout is how long a failover may take, and half the time
	// before a Sentinel tries again after one failed (failover-timeout).
	failoverTimeout time.Duration
}

// singleSentinel are the timings of NewSentinel.
var singleSentinel = sentinelTimings{quorum: 1, downAfter: time.Second, failoverTimeout: 5 * time.Second}

// NewSentinel starts a Redis Sentinel on a free 127.0.0.1 port that monitors
// master under masterName, with a quorum of one, so that go-redis's
// redis.NewFailoverClient can find the primary through it:
//
//	primary := redistest.NewServer(t)
//	sentinel := redistest.NewSentinel(t, "mymaster", primary)
//	rdb := redis.NewFailoverClient(&redis.FailoverOptions{
//		MasterName:    "mymaster",
//		SentinelAddrs: []string{sentinel.Addr()},
//	})
//
// The Sentinel thinks the primary down after one second without an answer
// (down-after-milliseconds 1000) and gives a failover five seconds, so tests
// of failovers run quickly. Options apply as for NewServer; the Sentinel's
// configuration file, which it rewrites as it learns about the deployment,
// lives in its Dir. It is stopped when the test ends, like a Server.
//
// The Sentinel is redis-server --sentinel, so it needs nothing beyond the
// redis-server binary. For a primary with replicas and three Sentinels that
// fail over by themselves, see [NewSentinelDeployment].
func NewSentinel(t testing.TB, masterName string, master *Server, opts ...Option) *Server {
	t.Helper()
	if err := checkMasterName(masterName); err != nil {
		t.Fatalf("redistest: NewSentinel: %v", err)
	}
	conf := sentinelConfig(masterName, master, singleSentinel, nil)
	return NewServer(t, append(opts, asSentinel(conf))...)
}

// checkMasterName reports an error for a name that does not fit on a line
// of sentinel.conf.
func checkMasterName(name string) error {
	if name == "" || strings.ContainsAny(name, " \t\r\n") {
		return fmt.Errorf("master name %q must be one word", name)
	}
	return nil
}

// asSentinel makes a Server a Sentinel with configuration conf.
func asSentinel(conf string) Option {
	return func(c *config) { c.sentinel = conf }
}

// peerSentinel is another Sentinel that a new one is told about.
type peerSentinel struct {
	port int
	id   string // its SENTINEL MYID
}

// sentinelConfig returns the sentinel.conf of a Sentinel that monitors
// master under masterName and knows of peers. Peers would be found anyway,
// from their hello messages on the primary, but that takes seconds.
func sentinelConfig(masterName string, master *Server, timings sentinelTimings, peers []peerSentinel) string {
	var b strings.Builder
	fmt.Fprintf(&b, "sentinel monitor %s %s %d %d\n", masterName, host, master.Port(), timings.quorum)
	fmt.Fprintf(&b, "sentinel down-after-milliseconds %s %d\n", masterName, timings.downAfter.Milliseconds())
	fmt.Fprintf(&b, "sentinel failover-timeout %s %d\n", masterName, timings.failoverTimeout.Milliseconds())
	for _, p := range peers {
		fmt.Fprintf(&b, "sentinel known-sentinel %s %s %d %s\n", masterName, host, p.port, p.id)
	}
	return b.String()
}
