package dlockgocron_test

import (
	"fmt"
	"os"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/redis/go-redis/v9"
	"go.uber.org/goleak"

	"github.com/dlock-go/dlock"
	"github.com/dlock-go/dlock/redistest"
)

// redisAddr is the address of a redis-server shared by the tests and the
// examples.
var redisAddr string

func TestMain(m *testing.M) {
	srv, stop, err := redistest.Start()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	redisAddr = srv.Addr()
	goleak.VerifyTestMain(runThenStop{m, stop})
}

// runThenStop stops the shared server after the tests and before goleak
// looks for goroutines left behind.
type runThenStop struct {
	m    *testing.M
	stop func()
}

func (r runThenStop) Run() int {
	defer r.stop()
	return r.m.Run()
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
