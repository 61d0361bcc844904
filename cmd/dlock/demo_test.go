package main

import (
	"strings"
	"testing"
	"time"

	"github.com/dlock-go/dlock/redistest"
)

// demoCaseNames are the names of the demo's cases, as its table shows them.
var demoCaseNames = []string{
	"double-click pay", "cron on two hosts", "(released early)", "flash sale", "hot cache key",
	"expired holder", "long job", "(not renewed)", "lost lock", "leader dies",
	"exports, 3 at once", "readers, a writer", "redlock, 5 nodes",
}

// checkDemoOK checks the output of a demo run that should have passed.
func checkDemoOK(t *testing.T, code int, stdout, stderr string) {
	t.Helper()
	if code != exitOK {
		t.Fatalf("exit status %d, want 0\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	for _, name := range demoCaseNames {
		if !strings.Contains(stdout, name) {
			t.Errorf("output does not mention case %q", name)
		}
	}
	for _, row := range []string{"double-click pay    idempotency  ", "cron on two hosts   jobs  ", "flash sale          stock  ",
		"hot cache key       cachefill  ", "leader dies         election  "} {
		if !strings.Contains(stdout, row) {
			t.Errorf("output does not name the package of a case: no %q", row)
		}
	}
	if n := strings.Count(stdout, "  ok: "); n != 11 {
		t.Errorf("%d invariants reported ok, want 11", n)
	}
	if !strings.Contains(stdout, "redlock, 5 nodes    dlock        A's lock on 5 embedded nodes; ") {
		t.Errorf("the redlock case does not say it runs on embedded nodes")
	}
	if !strings.Contains(stdout, "all invariants hold") || strings.Contains(stdout, "BROKEN") {
		t.Errorf("output does not say that all invariants hold")
	}
	if stderr != "" {
		t.Errorf("stderr should be empty:\n%s", stderr)
	}
	if t.Failed() {
		t.Logf("stdout:\n%s", stdout)
	}
}

func TestDemoEmbedded(t *testing.T) {
	t.Parallel()
	code, stdout, stderr := runCLI(t, "demo")
	checkDemoOK(t, code, stdout, stderr)
	if !strings.HasPrefix(stdout, "dlock demo on embedded Redis (miniredis)\n") {
		t.Errorf("output does not start with the embedded Redis:\n%s", stdout)
	}
}

func TestDemoRealRedis(t *testing.T) {
	t.Parallel()
	srv := redistest.NewServer(t)
	for run := range 2 { // the second run must not trip over the first one's keys
		code, stdout, stderr := runCLI(t, "demo", "--redis", srv.URL())
		checkDemoOK(t, code, stdout, stderr)
		if !strings.HasPrefix(stdout, "dlock demo on "+srv.URL()+"\n") {
			t.Errorf("run %d: output does not start with the server's URL:\n%s", run, stdout)
		}
	}
}

func TestDemoUnreachable(t *testing.T) {
	t.Parallel()
	start := time.Now()
	code, stdout, stderr := runCLI(t, "demo", "--redis", "redis://127.0.0.1:1/0", "--timeout", "2s")
	if elapsed := time.Since(start); elapsed >= 10*time.Second {
		t.Errorf("took %v to give up, want about --timeout (2s), not the demo's run (about 15s)", elapsed)
	}
	if code != exitUnavailable {
		t.Errorf("exit status %d, want %d", code, exitUnavailable)
	}
	want := "dlock: cannot reach redis at redis://127.0.0.1:1/0: "
	if !strings.HasPrefix(stderr, want) || !strings.Contains(stderr, "is redis-server running, and is --redis right?") {
		t.Errorf("stderr = %q, want %q... is redis-server running, and is --redis right?", stderr, want)
	}
	if stdout != "" {
		t.Errorf("stdout should be empty:\n%s", stdout)
	}
}

func TestDemoBadURL(t *testing.T) {
	t.Parallel()
	tests := []struct{ url, want string }{
		{"http://x", "dlock demo: bad --redis URL (not shown, as it may hold a password): it does not start with redis://, rediss:// or unix://; want redis://"},
		{"redis://x/notanumber", `invalid database number: "notanumber"`},
		{"redis://127.0.0.1:6379/0?color=blue", "unexpected option: color"},
		{"redis://u:pw@[::1", "dlock demo: bad --redis URL (not shown, as it may hold a password): a '[' without its ']' in the host; escape "},
	}
	for _, tt := range tests {
		code, stdout, stderr := runCLI(t, "demo", "--redis", tt.url)
		if code != exitUsage || !strings.Contains(stderr, tt.want) || stdout != "" {
			t.Errorf("--redis %s: exit status %d, stderr %q, stdout %q; want %d, an error containing %q",
				tt.url, code, stderr, stdout, exitUsage, tt.want)
		}
	}
}

// TestDemoPassword runs the demo on a server that requires a password: with
// the right one it works, with a wrong one the error says so, and neither
// prints the password.
func TestDemoPassword(t *testing.T) {
	t.Parallel()
	srv := redistest.NewServer(t, redistest.WithArgs("--requirepass", "s3cret"))

	code, stdout, stderr := runCLI(t, "demo", "--redis", "redis://default:n0tit@"+srv.Addr()+"/0")
	if code != exitUnavailable || !strings.Contains(stderr, "check the user and password") {
		t.Errorf("wrong password: exit status %d, stderr %q; want %d and advice to check the password", code, stderr, exitUnavailable)
	}
	if strings.Contains(stdout+stderr, "n0tit") {
		t.Errorf("wrong password: printed the password:\n%s%s", stdout, stderr)
	}

	code, stdout, stderr = runCLI(t, "demo", "--redis", "redis://default:s3cret@"+srv.Addr()+"/0")
	checkDemoOK(t, code, stdout, stderr)
	if want := "dlock demo on redis://default:xxxxx@" + srv.Addr() + "/0\n"; !strings.HasPrefix(stdout, want) {
		t.Errorf("output does not start with %q:\n%s", want, stdout)
	}
	if strings.Contains(stdout+stderr, "s3cret") {
		t.Errorf("printed the password:\n%s%s", stdout, stderr)
	}
}
