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
// # Requirements
//
// The package runs the redis-server binary named by the REDIS_SERVER_BIN
// environment variable, or else the first redis-server in PATH. Redis 7 is
// what it is tested with. On Debian and Ubuntu install it with
//
//	sudo apt-get install -y redis-server
//
// If the binary cannot be found, NewServer fails the test with a message that
// says so. Only Unix-like systems are supported; the package compiles
// elsewhere, but pausing a server fails there.
//
// # Guarantees
//
//   - Each server has its own temporary directory (from t.TempDir) as its
//     working directory, holding its log file, redis.log, and any file the
//     server writes, such as a cluster's nodes.conf.
//   - Servers have no persistence (--save "" --appendonly no): every dataset
//     is lost on Kill and Restart, and Start brings back an empty server on
//     the same port, unless [WithArgs] turns persistence back on.
//   - A server is stopped (SIGKILL) by t.Cleanup, after the clients made by
//     [Server.Client] have been closed. No process and no goroutine of this
//     package outlives the test's cleanup. On Linux the kernel also kills
//     redis-server if the test binary itself dies.
//
// # Failure modes
//
// All methods must be called from the test's goroutine, except
// [Server.Running], [Server.Addr], [Server.Port], [Server.URL] and
// [Server.LogTail], [Server.Dir], which are safe for concurrent use. Methods do not return
// errors: like the testing package, they stop the test with t.Fatalf, and
// the message of a server that failed to start includes the end of its log.
package redistest
