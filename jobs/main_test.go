package jobs_test

import (
	"testing"

	"github.com/dlock-go/dlock/internal/testenv"
)

// redisAddr is the address of a redis-server shared by the tests that need
// no server of their own, and by the examples.
var redisAddr string

func TestMain(m *testing.M) {
	testenv.Main(m, testenv.SharedServer(&redisAddr), testenv.IgnoreRedial())
}
