package election_test

import (
	"testing"

	"github.com/dlock-go/dlock"
	"github.com/dlock-go/dlock/election"
	"github.com/dlock-go/dlock/internal/testenv"
	"github.com/dlock-go/dlock/internal/testenv/lockenv"
	"github.com/dlock-go/dlock/redistest"
)

// redisAddr is the address of a redis-server shared by the tests that need
// no server of their own, and by the examples.
var redisAddr string

func TestMain(m *testing.M) {
	testenv.Main(m, testenv.SharedServer(&redisAddr), testenv.IgnoreRedial())
}

// closed reports whether ch is closed (or has a value).
func closed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// dlockOn returns a dlock Client on srv, closed when the test ends.
func dlockOn(t testing.TB, srv *redistest.Server) *dlock.Client {
	t.Helper()
	return lockenv.Locker(t, srv.Client(testenv.FastFail))
}

// newElection returns the election named name on locker, and fails the
// test if New fails.
func newElection(t testing.TB, locker *dlock.Client, name string, opts ...election.Option) *election.Election {
	t.Helper()
	e, err := election.New(locker, name, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return e
}
