package redistest_test

import (
	"fmt"
	"runtime"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/dlock-go/dlock/internal/testenv"
	"github.com/dlock-go/dlock/redistest"
)

// setAndWait sets key on rdb and waits until n replicas have acknowledged
// the write. SET and WAIT go through one connection, as WAIT is about the
// writes of its own connection.
func setAndWait(t *testing.T, rdb *redis.Client, key, value string, n int) {
	t.Helper()
	conn := rdb.Conn()
	defer conn.Close()
	if err := conn.Set(t.Context(), key, value, 0).Err(); err != nil {
		t.Fatalf("SET %s: %v", key, err)
	}
	if got, err := conn.Wait(t.Context(), n, 5*time.Second).Result(); err != nil || got != int64(n) {
		t.Fatalf("WAIT %d after SET %s: %d replicas, %v", n, key, got, err)
	}
}

// getEventually returns the value of key through rdb once GET stops
// failing, as it does for a moment after a failover, or fails the test
// after ten seconds.
func getEventually(t *testing.T, rdb redis.Cmdable, key string) string {
	t.Helper()
	var got string
	testenv.Eventually(t, 10*time.Second, "GET "+key+" to succeed", func() bool {
		v, err := rdb.Get(t.Context(), key).Result()
		got = v
		return err == nil
	})
	return got
}

// fatalTB is a test whose Fatalf records its message and ends the
// goroutine, as testing.T's does, without failing the real test.
type fatalTB struct {
	testing.TB
	msg string
}

func (f *fatalTB) Fatalf(format string, args ...any) {
	f.msg = fmt.Sprintf(format, args...)
	runtime.Goexit()
}

// fatalMessage runs f with a test whose Fatalf is recorded, and returns the
// message, failing t if f did not call Fatalf.
func fatalMessage(t *testing.T, f func(testing.TB)) string {
	t.Helper()
	tb := &fatalTB{TB: t}
	done := make(chan struct{})
	go func() {
		defer close(done)
		f(tb)
	}()
	<-done
	if tb.msg == "" {
		t.Fatal("the function did not fail the test")
	}
	return tb.msg
}

// logOnFailure logs the end of the servers' logs if the test fails.
func logOnFailure(t *testing.T, servers ...*redistest.Server) {
	t.Cleanup(func() {
		if t.Failed() {
			for _, s := range servers {
				t.Logf("last lines of the log of %s:\n%s", s.Addr(), s.LogTail(40))
			}
		}
	})
}
