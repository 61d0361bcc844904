package testenv_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/dlock-go/dlock/internal/testenv"
)

var redisAddr string

func TestMain(m *testing.M) {
	testenv.Main(m, testenv.SharedServer(&redisAddr))
}

func TestSharedServer(t *testing.T) {
	if redisAddr == "" || redisAddr != testenv.Addr(t) {
		t.Fatalf("redisAddr = %q, Addr = %q: want the same address", redisAddr, testenv.Addr(t))
	}
	rdb := testenv.Client(t, testenv.FastFail)
	if got := rdb.Options().Addr; got != redisAddr {
		t.Errorf("Client's address = %q, want %q", got, redisAddr)
	}
	if got := rdb.Options().DialTimeout; got != 200*time.Millisecond {
		t.Errorf("Client's DialTimeout = %v, want FastFail's 200ms", got)
	}
	if err := rdb.Ping(testenv.Timeout(t, 10*time.Second)).Err(); err != nil {
		t.Fatalf("PING: %v", err)
	}
}

func TestKey(t *testing.T) {
	k := testenv.Key(t)
	if again := testenv.Key(t); again != k {
		t.Errorf("Key changed within the test: %q, then %q", k, again)
	}
	t.Run("sub/test", func(t *testing.T) {
		if sub := testenv.Key(t); sub == k {
			t.Errorf("a subtest has its parent's key %q", k)
		}
	})
	a, b := testenv.NewKey(t), testenv.NewKey(t)
	if a == b || a == k || b == k {
		t.Errorf("NewKey gave %q, then %q, beside Key's %q: want three keys", a, b, k)
	}
}

func TestTimeout(t *testing.T) {
	var ctx context.Context
	t.Run("inner", func(t *testing.T) {
		ctx = testenv.Timeout(t, time.Hour)
		if ctx.Err() != nil {
			t.Fatalf("the context ended at once: %v", ctx.Err())
		}
	})
	if !errors.Is(ctx.Err(), context.Canceled) {
		t.Errorf("after its test, the context's error is %v, want context.Canceled", ctx.Err())
	}
	ctx = testenv.Timeout(t, time.Millisecond)
	<-ctx.Done()
	if !errors.Is(ctx.Err(), context.DeadlineExceeded) {
		t.Errorf("past d, the context's error is %v, want context.DeadlineExceeded", ctx.Err())
	}
}

// recorder is a testing.TB whose Fatalf records instead of stopping.
type recorder struct {
	testing.TB
	failed string
}

func (r *recorder) Helper() {}
func (r *recorder) Fatalf(format string, args ...any) {
	r.failed = fmt.Sprintf(format, args...)
}

func TestEventually(t *testing.T) {
	n := 0
	testenv.Eventually(t, time.Second, "the third look", func() bool { n++; return n == 3 })
	if n != 3 {
		t.Errorf("cond looked at %d times, want 3", n)
	}
	r := &recorder{TB: t}
	testenv.Eventually(r, 20*time.Millisecond, "never", func() bool { return r.failed != "" })
	if r.failed != "never: not within 20ms" {
		t.Errorf("the failure said %q", r.failed)
	}
}
