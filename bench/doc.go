// Package bench measures dlock side by side with its peers, bsm/redislock,
// go-redsync/redsync and rueidis's rueidislock, and with the raw floor: the
// same commands sent by hand with go-redis (SET NX PX, then a
// compare-and-delete script).
//
// It is a module of its own so that the peers never enter dlock's go.mod.
// Every measurement starts the redis-server processes it needs on loopback
// ports through redistest, and stops them.
//
// Five measurements, each row one library configured one way (see the Rows
// functions; Row.Note says how):
//
//	(a) BenchmarkUncontended  obtain + release of free keys, 1, 8 and 64 goroutines
//	(b) BenchmarkHandoff      from a holder's release to a blocked waiter holding the lock
//	(e) BenchmarkRedlock      obtain + release over 5 independent nodes
//	(c) RunHotKey             16 clients competing for one key (cmd/peers hotkey)
//	(d) RunRenew              10,000 locks held and renewed on one client (cmd/peers renew)
//
// scripts/bench-peers at the repository's root runs them all and writes
// docs/benchmarks.md's peers section. The results depend on the machine: run
// them on an otherwise idle one, and compare rows of one run only.
package bench
