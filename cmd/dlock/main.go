// Command dlock runs work under distributed locks on Redis.
//
// Usage:
//
//	dlock [--version] <command> [flags]
//
// Commands:
//
//	run     run a command under a lock, so that it runs once, or one at a
//	        time (in arrival order with --fair), across hosts: a distributed
//	        flock for cron jobs, as in
//	        dlock run --key nightly-report --min-hold 5m -- /usr/local/bin/report
//	        or at most once per slot (--once-per 24h) whatever the hosts' clocks
//	elect   keep a command running on exactly one host: campaign in an
//	        election, run it while leading, stop it on a loss, campaign again
//	leader  show who leads an election (dlock elect, package election) and
//	        its term; with --watch, each change until interrupted
//	status  show a lock: held or not, ttl, fence, its holder's name and
//	        fingerprint, the number of waiters
//	list    list the held locks, optionally those matching a pattern (SCAN),
//	        without the records of packages unless --all
//	top     watch the held locks, redrawn in place: holder, held for, ttl,
//	        fence, waiters, acquisitions per second; sorted by a key
//	release delete a lock whoever holds it; refuses without --force, and
//	        refuses a package's record or a value that is no lock
//	check   warn about Redis settings that weaken locks (eviction, no AOF)
//	demo    run the classic cases of distributed locking (a cron job on two hosts,
//	        a double-clicked pay button, a flash sale, a lock that expires
//	        under a slow holder, a job longer than its lock's ttl, a worker
//	        cut off from Redis, a leader that dies) and check that each
//	        one's invariant holds
//
// The commands that take --redis take it several times (or DLOCK_REDIS
// several comma-separated URLs) for a Redlock quorum of independent
// servers: a lock is held while a majority of them hold it, and the
// commands go on while a majority of them answer.
//
// Run "dlock <command> --help" for a command's flags and exit statuses.
// dlock --help shows the table of exit statuses of every verb, and so does
// docs/cli.md: 0 done, 1 a check or the demo failed, 3 nothing there (a free
// lock for status, no leader for leader), 64 a usage error (EX_USAGE), 69
// Redis unavailable (EX_UNAVAILABLE), 75 the lock taken by another holder
// (EX_TEMPFAIL), 76 the lock lost before the command ended, 79 the --once-per
// slot done or taken, 126 and 127 a command that could not start, 128+N a
// signal, and otherwise the status of the command that run or elect ran.
//
// The command line is parsed with the standard library's flag package, one
// FlagSet per command: a handful of verbs with a few flags each need no
// more, the binary stays small and starts in a few milliseconds (see
// docs/benchmarks.md), and the command's module gains no dependency. cobra
// would bring shell completion and nested help, which dlock does not need
// yet.
//
// The command is a module of its own (cmd/dlock/go.mod), so that the
// library's users do not download its dependencies: the embedded Redis of
// the demo (internal/demo) and the terminal of dlock top (internal/top).
package main

import (
	"log/slog"
	"os"

	"github.com/redis/go-redis/v9/logging"
)

func main() {
	quietLogs()
	os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

// quietLogs stops go-redis and the dlock library from logging on stderr.
// go-redis logs each failed dial of its connection pools: with a node of a
// Redlock quorum down, several lines a second, in the mail cron sends. The
// library logs to slog.Default() what it cannot return to its caller (a
// lock lost, a release that failed in the background). dlock says itself
// what failed, in its errors, and with -v passes on the library's log,
// which names the node of each failure. It sets the loggers of the
// process, which are dlock's alone.
func quietLogs() {
	logging.Disable()
	slog.SetDefault(slog.New(slog.DiscardHandler))
}
