package testenv_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
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

// errorsTB records the errors reported to it, and fails nothing.
type errorsTB struct {
	testing.TB
	errs []string
}

func (r *errorsTB) Errorf(format string, args ...any) {
	r.errs = append(r.errs, fmt.Sprintf(format, args...))
}

// DocCodeIsTested finds each block of doc.go's code in the test files
// whatever its indentation, blank lines inside it included, and reports
// the block found in none.
func TestDocCodeIsTested(t *testing.T) {
	dir := t.TempDir()
	for name, text := range map[string]string{
		"doc.go":    "// Package p.\n//\n//\ta := 1\n//\n//\tb := a\n//\n// Text.\n//\n//\tc := 2\npackage p\n",
		"p_test.go": "package p\n\nfunc f() {\n\t\ta := 1\n\n\t\tb := a\n}\n",
	} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	t.Chdir(dir)
	first := &errorsTB{TB: t}
	testenv.DocCodeIsTested(first, 1)
	if len(first.errs) != 0 {
		t.Errorf("the first block, in p_test.go: %q", first.errs)
	}
	both := &errorsTB{TB: t}
	testenv.DocCodeIsTested(both, 2)
	if len(both.errs) != 1 || !strings.HasSuffix(both.errs[0], ":\nc := 2") {
		t.Errorf("the second block, in no test file: %q, want one error showing it", both.errs)
	}
}
