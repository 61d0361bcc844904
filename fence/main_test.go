package fence_test

import (
	"testing"

	"go.uber.org/goleak"

	"github.com/dlock-go/dlock/internal/testenv/pgtest"
	"github.com/dlock-go/dlock/redistest"
)

var (
	// redisAddr is the address of the redis-server the tests share.
	redisAddr string
	// postgres is the PostgreSQL server the tests share, started by the
	// first test that needs it.
	postgres pgtest.Shared
)

func TestMain(m *testing.M) {
	run := runFunc(func() int {
		defer postgres.Close()
		return m.Run()
	})
	goleak.VerifyTestMain(redistest.Shared(run, &redisAddr),
		// go-redis redials a dead server in a goroutine that sleeps first.
		goleak.IgnoreAnyFunction("github.com/redis/go-redis/v9/internal/pool.(*ConnPool).tryDial"))
}

// runFunc is a function with the Run method that redistest.Shared and
// goleak.VerifyTestMain call.
type runFunc func() int

func (f runFunc) Run() int { return f() }
