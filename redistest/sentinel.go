package redistest

import (
	"fmt"
	"strings"
	"testing"
)

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
func NewSentinel(t testing.TB, masterName string, master *Server, opts ...Option) *Server {
	t.Helper()
	if masterName == "" || strings.ContainsAny(masterName, " \t\r\n") {
		t.Fatalf("redistest: NewSentinel: master name %q must be one word", masterName)
	}
	conf := fmt.Sprintf(`sentinel monitor %[1]s %[2]s %[3]d 1
sentinel down-after-milliseconds %[1]s 1000
sentinel failover-timeout %[1]s 5000
`, masterName, host, master.Port())
	opts = append(opts, func(c *config) { c.sentinel = conf })
	return NewServer(t, opts...)
}
