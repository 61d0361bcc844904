package dlockprom_test

import (
	"testing"

	"go.uber.org/goleak"

	"github.com/dlock-go/dlock/redistest"
)

// redisAddr is the address of the redis-server the tests share.
var redisAddr string

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(redistest.Shared(m, &redisAddr),
		// go-redis redials a dead server in a goroutine that sleeps first.
		goleak.IgnoreAnyFunction("github.com/redis/go-redis/v9/internal/pool.(*ConnPool).tryDial"))
}
