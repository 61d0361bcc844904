// Package redistest starts real redis-server processes for tests, in the
// spirit of net/http/httptest.
//
// [NewServer] starts a redis-server on a free 127.0.0.1 port, waits until it
// answers PING and registers a t.Cleanup that stops it. The server can then be
// killed, paused, resumed and restarted, which is what a test of a distributed
// lock needs to inject faults: a crashed node ([Server.Kill]), a node that
// accepts connections but never answers ([Server.Pause]), a node that comes
// back empty ([Server.Restart]). [NewServers] starts several independent
// servers for quorum (Redlock-style) tests, and [NewSentinel] a Sentinel
// that monitors a server, for go-redis's failover client. [Start] starts a
// server outside of any one test, for a TestMain that shares it among a
// package's tests and examples.
//
//	func TestCounter(t *testing.T) {
//		srv := redistest.NewServer(t)
//		rdb := srv.Client()
//		if err := rdb.Incr(t.Context(), "n").Err(); err != nil {
//			t.Fatal(err)
//		}
//	}
//
// # Replicated deployments
//
// For tests through failovers, where a lock may be lost with the writes that
// had not reached a replica:
//
//   - [NewReplica] starts a replica of a server and waits until it is in
//     sync; [WaitReplicating] waits for that again after a restart or a
//     failover.
//   - [NewSentinelDeployment] starts a primary, two replicas and three
//     Sentinels that fail over by themselves in about four seconds; its
//     FailoverClient follows them, and its Failover and WaitFailover
//     methods wait for a failover to be over.
//   - [NewCluster] starts a Redis Cluster of any number of primaries and
//     replicas, ready in about two seconds, whose ClusterClient, PrimaryOf,
//     Failover (manual) and WaitFailover (after a primary was killed) do the
//     same for Redis Cluster. [StartCluster] starts one for a TestMain, and
//     [Slot] computes a key's hash slot.
//
// Their servers are ordinary Servers, to be killed, paused and restarted.
// Timeouts are short (a node is thought down after one second in a cluster,
// two with Sentinel), so that a failover takes seconds, not the half minute
// or more it takes with Redis's defaults;
// otherwise Redis behaves as in production, such as an old primary that
// still accepts writes for a while after Sentinel promoted a replica.
//
// # Requirements
//
// The package runs the redis-server binary named by the REDIS_SERVER_BIN
// environment variable, or else the first redis-server in PATH. Redis 7 is
// what it is tested with, and what NewCluster (CLUSTER ADDSLOTSRANGE) and
// NewSentinelDeployment (SENTINEL DEBUG) need. On Debian and Ubuntu install
// it with
//
//	sudo apt-get install -y redis-server
//
// Sentinels are redis-server --sentinel: the redis-sentinel package is not
// needed. If the binary cannot be found, NewServer fails the test with a
// message that says so. Only Unix-like systems are supported; the package
// compiles elsewhere, but pausing a server fails there.
//
// # Guarantees
//
//   - Each server has its own temporary directory (from t.TempDir) as its
//     working directory, holding its log file, redis.log, and any file the
//     server writes, such as a cluster's nodes.conf.
//   - Servers have no persistence (--save "" --appendonly no): every dataset
//     is lost on Kill and Restart, and Start brings back an empty server on
//     the same port, unless [WithArgs] turns persistence back on. A replica
//     then copies its primary's dataset again, and a cluster node keeps its
//     place in the cluster, which is in its nodes.conf.
//   - A replica gets its first copy of the dataset at once
//     (--repl-diskless-sync-delay 0, where Redis waits five seconds for more
//     replicas by default).
//   - A cluster node (--cluster-enabled yes) gets a free cluster bus port
//     ([Server.ClusterBusPort]) that it keeps across restarts, rather than
//     its port plus 10000, which may be taken or out of range.
//   - A server is stopped (SIGKILL) by t.Cleanup, after the clients made by
//     [Server.Client], [Cluster.Client] and
//     [SentinelDeployment.FailoverClient] have been closed. No process and no
//     goroutine of this package outlives the test's cleanup. On Linux the
//     kernel also kills redis-server if the test binary itself dies.
//
// # Failure modes
//
// All methods must be called from the test's goroutine, except
// [Server.Running], [Server.Addr], [Server.Port], [Server.URL],
// [Server.LogTail], [Server.Dir] and [Server.ClusterBusPort], which are safe
// for concurrent use. Methods do not return errors: like the testing
// package, they stop the test with t.Fatalf, and the message of a server
// that failed to start includes the end of its log; the message of a
// deployment that did not settle in time says what it was waiting for.
//
// The waits of replicated deployments ask every running server how it is
// doing, so a paused server other than the primary being replaced makes
// them wait until they time out. They send no password: servers that
// require one (requirepass) cannot be used in them.
package redistest
