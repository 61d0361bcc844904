// Package faults injects network faults between a Redis client and its
// server, for tests of code that must survive them, such as a distributed
// lock whose node goes away while a lock is held.
//
// A [Proxy] is a TCP proxy on a free 127.0.0.1 port that forwards to an
// upstream address, usually a redistest.Server. Point the client at
// [Proxy.Addr] instead of the server, then break the path between them:
//
//	srv := redistest.NewServer(t)
//	p := faults.New(t, srv.Addr())
//	rdb := p.Client() // go-redis, short timeouts, no retries
//
//	p.Cut()     // every connection closed, new ones refused
//	p.Restore() // connections accepted again
//
//	remove := p.Latency(50*time.Millisecond, 0) // each direction 50ms slower
//	remove()
//
//	p.Blackhole() // connections open, nothing passes: commands time out
//	p.Clear()     // every fault removed, every connection closed
//
// A client from [Proxy.Client] has no retries, so that a fault shows in its
// first error. Give it go-redis's default retries back with
// [DefaultRetries], p.Client(faults.DefaultRetries): go-redis then sends a
// command again when its reply is late, and every copy runs. Code that
// changes state must pass its fault tests both ways; this package's own
// tests run the fenced-resource checker with both, and send every mutating
// call of dlock while Redis is paused past go-redis's default ReadTimeout
// (TestCallsResentByTheRedisClient: one shared pause of 7.5 s).
//
// Every fault applies at once to the connections that are already open, not
// only to new ones: that is what a pooled go-redis connection needs to see.
// [Nodes] starts several servers, each behind its own proxy, for tests of a
// quorum of independent nodes (Redlock).
//
// The proxy is Shopify's toxiproxy (github.com/Shopify/toxiproxy/v2) run in
// the test's own process, without its HTTP API: a Proxy is a
// toxiproxy.Proxy, and each fault is one of its toxics.
//
// # Why a module of its own
//
// toxiproxy brings in a Prometheus client, an HTTP router, a logging library
// and their dependencies. The package lives in the nested module
// github.com/dlock-go/dlock/faults so that none of them enters the go.mod of
// dlock itself, which its users build against; only tests import faults.
//
// # Guarantees
//
//   - A proxy listens on loopback only, and forwards only to the upstream it
//     was given.
//   - The proxy made by [New] is stopped by t.Cleanup, after the clients made
//     by [Proxy.Client] have been closed. Its cleanup waits until every
//     goroutine toxiproxy started for it has exited, and fails the test if
//     one is still running after five seconds.
//   - toxiproxy's log is discarded: it logs every connection, and logs from
//     goroutines that may outlive a test, where t.Log would panic.
//
// # Failure modes and caveats
//
//   - Faults are what toxiproxy does, with its resolution of a millisecond:
//     durations are rounded up to whole milliseconds.
//   - [Proxy.Cut] closes the proxy's listener, so the port is free while the
//     proxy is cut. [Proxy.Restore] binds it again; if another process took
//     the port in between, which the kernel makes unlikely, Restore fails
//     the test.
//   - Removing a fault, with [Proxy.Clear] or the function that added it
//     returned, closes every connection through the proxy, as a Cut at once
//     followed by a Restore would, and drops the data the fault held back;
//     go-redis reconnects on its next command. This is deliberate:
//     toxiproxy v2.12.0 cannot take a toxic off open connections safely. A
//     connection closing at that moment keeps the toxic while the proxy
//     forgets it, and the next fault added panics in ToxicLink.AddToxic;
//     removing a timeout toxic (a blackhole) can leave a goroutine blocked
//     for ever, and removing a latency can hang with the proxy's lock held. So faults are removed only while the proxy has no
//     connection, which also leaves no stream out of step after a
//     blackhole. For that moment, new connections are refused.
//   - [Proxy.ResetPeer] resets connections made while it is in place (TCP
//     RST); a connection that was already open is closed normally (FIN),
//     because toxiproxy can only set SO_LINGER on a connection when it
//     opens. go-redis reports both as EOF.
//   - A goroutine of toxiproxy can still be left blocked for ever when a
//     connection closes while a latency holds several chunks of its data
//     back, because the goroutine that writes to the connection stops at
//     the first error. The cleanup then fails the test and lists it. Redis
//     clients rarely have more than one request or reply in flight on a
//     connection, so this has not been seen in this package's tests.
//   - go-redis logs failed dials ("connection pool: failed to dial") to
//     standard error through its own global logger, which the package
//     leaves alone; those lines are expected while a proxy is cut.
//   - Methods report errors with t.Errorf and then do nothing, so they may be
//     called from any goroutine, for example from a time.AfterFunc that cuts
//     the network in the middle of a call. [New] and [Nodes] must be called
//     from the test's goroutine.
//
// # Slow runs
//
// TestStalledHolderExpiry stalls a holder's connection 3 times by default;
// with DLOCK_SLOW_FAULTS=1 it does so 20 times, and DLOCK_STALL_RUNS=N sets
// any count. The other packages' slow fault tests read DLOCK_SLOW_FAULTS
// too (see the README's Development section).
package faults
