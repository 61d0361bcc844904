//go:build unix

package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/dlock-go/dlock"
	"github.com/dlock-go/dlock/election"
	"github.com/dlock-go/dlock/redistest"
)

// candidate returns an election named name on srv, through a Client of
// its own that the test closes.
func candidate(t *testing.T, srv *redistest.Server, name string) *election.Election {
	t.Helper()
	locker := dlock.New(srv.Client())
	t.Cleanup(func() { locker.Close() })
	e, err := election.New(locker, name)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// campaign makes e's caller lead with value, and resigns when the test ends.
func campaign(t *testing.T, e *election.Election, value string) *election.Leadership {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	l, err := e.Campaign(ctx, value)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = l.Resign(context.Background()) })
	return l
}

func TestLeader(t *testing.T) {
	t.Parallel()
	srv := redistest.NewServer(t)

	code, out, errOut := runCLI(t, "leader", "--key", "scheduler", "--redis", srv.URL())
	if code != exitNone || out != "no leader\n" || errOut != "" {
		t.Errorf("leader of an empty seat = %d, %q, %q; want 3 and \"no leader\"", code, out, errOut)
	}
	code, out, _ = runCLI(t, "leader", "--key", "scheduler", "--json", "--redis", srv.URL())
	if code != 3 || out != `{"leader":false}`+"\n" {
		t.Errorf("leader --json of an empty seat = %d, %q", code, out)
	}

	l := campaign(t, candidate(t, srv, "scheduler"), "host a")
	code, out, errOut = runCLI(t, "leader", "--key", "scheduler", "--redis", srv.URL())
	// The term is shown with the time it stands for: when the leader took the seat.
	at := time.UnixMicro(l.Term()).UTC().Format("2006-01-02 15:04:05 MST")
	if want := fmt.Sprintf("term %d (%s): \"host a\"\n", l.Term(), at); code != exitOK || out != want {
		t.Errorf("leader = %d, %q, %q; want 0 and %q", code, out, errOut, want)
	}
	code, out, _ = runCLI(t, "leader", "--key", "scheduler", "--json", "--redis", srv.URL())
	var got leaderJSON
	if err := json.Unmarshal([]byte(out), &got); err != nil || code != exitOK {
		t.Fatalf("leader --json = %d, %q: %v", code, out, err)
	}
	if want := (leaderJSON{Leader: true, Value: "host a", Term: l.Term()}); got != want {
		t.Errorf("leader --json = %+v, want %+v", got, want)
	}
}

func TestLeaderUsage(t *testing.T) {
	t.Parallel()
	tests := []struct {
		args   []string
		code   int
		stderr string
	}{
		{[]string{"leader"}, exitUsage, "--key is required"},
		{[]string{"leader", "--key", "k", "extra"}, exitUsage, `unexpected argument "extra"`},
		{[]string{"leader", "--key", "k", "--redis", "redis://127.0.0.1:1/0"}, exitUnavailable, "cannot reach redis"},
		{[]string{"leader", "--watch", "--key", "k", "--redis", "redis://127.0.0.1:1/0"}, exitUnavailable, "cannot reach redis"},
	}
	for _, tt := range tests {
		code, stdout, stderr := runCLI(t, tt.args...)
		if code != tt.code || !strings.Contains(stderr, tt.stderr) || stdout != "" {
			t.Errorf("dlock %s = %d, stdout %q, stderr %q; want %d and %q", strings.Join(tt.args, " "), code, stdout, stderr, tt.code, tt.stderr)
		}
	}
	code, stdout, _ := runCLI(t, "leader", "--help")
	for _, want := range []string{"-key KEY", "-watch", "-json", "no leader", "\n  3 "} {
		if code != exitOK || !strings.Contains(stdout, want) {
			t.Errorf("leader --help does not contain %q", want)
		}
	}
}

// lineReader starts dlock with args and returns its stdout line by line.
// The process is killed when the test ends, if it still runs.
func lineReader(t *testing.T, args ...string) (*exec.Cmd, <-chan string) {
	t.Helper()
	cmd := exec.CommandContext(t.Context(), dlockBinary, args...)
	cmd.Env = withoutDlockEnv()
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	lines := make(chan string)
	go func() {
		defer close(lines)
		scanner := bufio.NewScanner(out)
		for scanner.Scan() {
			lines <- scanner.Text()
		}
		_, _ = io.Copy(io.Discard, out)
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		for range lines { // until the reader ends
		}
		_ = cmd.Wait()
	})
	return cmd, lines
}

// withoutDlockEnv is the test's environment without the DLOCK_ variables.
func withoutDlockEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "DLOCK_") {
			env = append(env, kv)
		}
	}
	return env
}

// nextLine returns the next line from lines, and fails the test if none
// comes within 10s.
func nextLine(t *testing.T, lines <-chan string) string {
	t.Helper()
	select {
	case line, ok := <-lines:
		if !ok {
			t.Fatal("dlock's stdout closed")
		}
		return line
	case <-time.After(10 * time.Second):
		t.Fatal("waited 10s for a line of dlock")
	}
	return ""
}

// TestLeaderWatch checks that --watch prints the leader, then each change,
// and ends with status 0 on SIGINT.
func TestLeaderWatch(t *testing.T) {
	t.Parallel()
	srv := redistest.NewServer(t)
	cmd, lines := lineReader(t, "leader", "--watch", "--json", "--key", "seat", "--redis", srv.URL())
	if line := nextLine(t, lines); line != `{"leader":false}` {
		t.Fatalf("first line %q, want no leader", line)
	}
	e := candidate(t, srv, "seat")
	a := campaign(t, e, "a")
	if line, want := nextLine(t, lines), fmt.Sprintf(`{"leader":true,"value":"a","term":%d}`, a.Term()); line != want {
		t.Fatalf("line %q, want %q", line, want)
	}
	if err := a.Resign(t.Context()); err != nil {
		t.Fatal(err)
	}
	// The empty seat may be skipped if b comes first: read until b.
	b := campaign(t, e, "b")
	want := fmt.Sprintf(`{"leader":true,"value":"b","term":%d}`, b.Term())
	for line := nextLine(t, lines); line != want; line = nextLine(t, lines) {
		if line != `{"leader":false}` {
			t.Fatalf("line %q, want no leader or %q", line, want)
		}
	}
	if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	for range lines {
	}
	if err := cmd.Wait(); err != nil {
		t.Errorf("dlock leader --watch ended with %v after SIGINT, want status 0", err)
	}
}
