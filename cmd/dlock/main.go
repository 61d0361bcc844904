// Command dlock runs work under distributed locks on Redis.
//
// Usage:
//
//	dlock [--version] <command> [flags]
//
// Commands:
//
//	demo    run the cases this project started from (a cron job on two hosts,
//	        a double-clicked pay button, a flash sale, a lock that expires
//	        under a slow holder) and check that each one's invariant holds
//
// Run "dlock <command> --help" for a command's flags. The exit status is 0 on
// success, 1 when something failed (Redis unreachable, an invariant broken),
// and 2 for a usage error.
package main

import "os"

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}
