package dlockgocron_test

import (
	"fmt"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/redis/go-redis/v9"
	"go.uber.org/goleak"

	"github.com/dlock-go/dlock"
	"github.com/dlock-go/dlock/election"
	"github.com/dlock-go/dlock/jobs"
	"github.com/dlock-go/dlock/redistest"
)

// redisAddr is the address of a redis-server shared by the tests and the
// examples.
var redisAddr string

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(redistest.Shared(m, &redisAddr))
}

// newLocker returns a dlock Client on the shared server, closed when the
// test ends: one per simulated host.
func newLocker(t testing.TB) *dlock.Client {
	t.Helper()
	rdb := redis.NewClient(&redis.Options{Addr: redisAddr})
	locker := dlock.New(rdb)
	t.Cleanup(func() {
		locker.Close()
		rdb.Close()
	})
	return locker
}

// runs tells apart the runs of a test in one process (go test -count).
var runs atomic.Int64

// testName returns a name unique to the test and its run.
func testName(t testing.TB) string {
	return fmt.Sprintf("test:%s:%d", strings.ReplaceAll(t.Name(), "/", ":"), runs.Add(1))
}

// newRunner returns a jobs Runner on a Client of its own, and fails the
// test if jobs.New fails.
func newRunner(t testing.TB, opts ...jobs.Option) *jobs.Runner {
	t.Helper()
	r, err := jobs.New(newLocker(t), opts...)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// newElection returns the election named name on locker, and fails the
// test if election.New fails.
func newElection(t testing.TB, locker *dlock.Client, name string, opts ...election.Option) *election.Election {
	t.Helper()
	e, err := election.New(locker, name, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return e
}
