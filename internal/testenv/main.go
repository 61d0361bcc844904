package testenv

import (
	"testing"

	"go.uber.org/goleak"

	"github.com/dlock-go/dlock/redistest"
)

// sharedAddr is the address of the redis-server that Main started with
// SharedServer, or "" if it started none. Main sets it once, before any
// test runs.
var sharedAddr string

// An Option changes what Main does around the tests.
type Option func(*config)

type config struct {
	addr    *string
	ignores []goleak.Option
}

// SharedServer makes Main start one redis-server for the package's tests
// and stop it after them, before the leak check. *addr, Addr and Client
// give its address to the tests, which keep their keys apart with Key or
// NewKey. Without it Main starts no server.
func SharedServer(addr *string) Option {
	return func(c *config) { c.addr = addr }
}

// IgnoreRedial makes the leak check pass over go-redis's redial of a dead
// server. go-redis's pool redials a dead server in a goroutine of its own,
// which sleeps a second between dials and only then sees that its client
// was closed: it outlives tests that kill a server by up to that second.
func IgnoreRedial() Option {
	return func(c *config) {
		c.ignores = append(c.ignores,
			goleak.IgnoreAnyFunction("github.com/redis/go-redis/v9/internal/pool.(*ConnPool).tryDial"))
	}
}

// Main runs the package's tests (the redis-server of SharedServer around
// them), then fails the run if they left goroutines behind, and exits.
// Call it from TestMain. If the shared server cannot start, Main says why
// on standard error and exits with status 1 without running any test.
func Main(m *testing.M, opts ...Option) {
	var c config
	for _, o := range opts {
		o(&c)
	}
	var run interface{ Run() int } = m
	if c.addr != nil {
		run = redistest.Shared(runFunc(func() int {
			*c.addr = sharedAddr
			return m.Run()
		}), &sharedAddr)
	}
	goleak.VerifyTestMain(run, c.ignores...)
}

// runFunc is a function with the Run method that redistest.Shared and
// goleak.VerifyTestMain call.
type runFunc func() int

func (f runFunc) Run() int { return f() }
