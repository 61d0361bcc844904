package redistest

import (
	"fmt"
	"strings"
)

// config is what the Options of NewServer and NewServers build.
type config struct {
	args     []string
	sentinel string // the configuration of a Sentinel (NewSentinel), or ""
}

// Option configures a Server started by [NewServer] or [NewServers].
type Option func(*config)

// WithArgs appends extra redis-server command-line arguments, for example
//
//	redistest.WithArgs("--maxmemory-policy", "allkeys-lru")
//	redistest.WithArgs("--cluster-enabled", "yes")
//
// By default there are none. Arguments accumulate over several WithArgs, and
// a later value of an option overrides an earlier one, as redis-server does.
// Relative file names resolve in the server's temporary directory.
//
// The options --port, --bind, --dir, --logfile and --daemonize are managed by
// the package and may not be set: NewServer fails the test if they are.
// Persistence may be turned back on (--appendonly yes), in which case what
// reached the append-only file survives Restart.
func WithArgs(args ...string) Option {
	return func(c *config) {
		c.args = append(c.args, args...)
	}
}

// checkArgs reports an error if args set an option that the package sets
// itself and relies on: overriding one would break the readiness check,
// cleanup or LogTail.
func checkArgs(args []string) error {
	for _, arg := range args {
		switch strings.ToLower(arg) {
		case "--port", "--bind", "--dir", "--logfile", "--daemonize":
			return fmt.Errorf("redistest: WithArgs may not set %s: the package manages it", arg)
		}
	}
	return nil
}
