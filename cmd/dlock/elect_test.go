//go:build unix

package main

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/dlock-go/dlock/election"
	"github.com/dlock-go/dlock/redistest"
)

// leaderScript is a command for "sh -c" that elect runs: it writes its term
// to "$1.term" and its pid to "$1.pid", then waits until "$1.done" exists,
// and exits 7.
const leaderScript = `echo $$ > "$1.pid.tmp" && mv "$1.pid.tmp" "$1.pid"
echo "$DLOCK_KEY $DLOCK_TERM" > "$1.term.tmp" && mv "$1.term.tmp" "$1.term"
while [ ! -e "$1.done" ]; do sleep 0.02; done; exit 7`

// readTerm returns the term that leaderScript wrote to prefix.term.
func readTerm(t *testing.T, prefix, key string) int64 {
	t.Helper()
	data, err := os.ReadFile(prefix + ".term")
	if err != nil {
		t.Fatal(err)
	}
	term, err := strconv.ParseInt(strings.TrimPrefix(strings.TrimSpace(string(data)), key+" "), 10, 64)
	if err != nil || term <= 0 {
		t.Fatalf("%s.term holds %q, want %q and a term", prefix, data, key)
	}
	return term
}

// killFromPidFile SIGKILLs the process whose pid the file holds, if any.
func killFromPidFile(path string) {
	data, err := os.ReadFile(path)
	if err != nil {
		return
	}
	if pid, err := strconv.Atoi(strings.TrimSpace(string(data))); err == nil && pid > 0 {
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
}

// TestElectTakeover runs two dlock elects on one key: one runs its
// command; its dlock is SIGKILLed, and the other takes over, with a larger
// term, once the lease runs out. Its command exiting by itself ends its
// dlock with the command's status, and empties the seat.
func TestElectTakeover(t *testing.T) {
	t.Parallel()
	srv := redistest.NewServer(t)
	dir := t.TempDir()
	hosts := map[string]*dlockProcess{}
	for _, host := range []string{"a", "b"} {
		prefix := filepath.Join(dir, host)
		t.Cleanup(func() {
			if t.Failed() { // a command may live on without its dlock
				killFromPidFile(prefix + ".pid")
			}
		})
		hosts[host] = startDlock(t, nil, "elect", "--key", "svc", "--ttl", "1s", "--value", host, "--redis", srv.URL(),
			"--", "sh", "-c", leaderScript, "sh", prefix)
	}
	seat := candidate(t, srv, "svc")
	var first string
	waitUntil(t, "a command to start", func() bool {
		for host := range hosts {
			if exists(filepath.Join(dir, host+".term")) {
				first = host
				return true
			}
		}
		return false
	})
	second := map[string]string{"a": "b", "b": "a"}[first]
	firstTerm := readTerm(t, filepath.Join(dir, first), "svc")
	if l, err := seat.Leader(t.Context()); err != nil || l != (election.Leader{Value: first, Term: firstTerm}) {
		t.Fatalf("Leader() = %+v, %v; want %s in term %d", l, err, first, firstTerm)
	}
	if exists(filepath.Join(dir, second+".term")) {
		t.Fatal("both commands run")
	}

	if err := hosts[first].cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	// Its command lives on, holding dlock's stdout open: end it too, as a
	// host that dies would.
	killFromPidFile(filepath.Join(dir, first+".pid"))
	checkCode(t, hosts[first].wait(t), -1) // killed
	waitUntil(t, "the other host to take over", func() bool { return exists(filepath.Join(dir, second+".term")) })
	if term := readTerm(t, filepath.Join(dir, second), "svc"); term <= firstTerm {
		t.Errorf("the new leader's term %d is not above the old one's, %d", term, firstTerm)
	}

	if err := os.WriteFile(filepath.Join(dir, second+".done"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	checkCode(t, hosts[second].wait(t), 7)
	if l, err := seat.Leader(t.Context()); !errors.Is(err, election.ErrNoLeader) {
		t.Errorf("after the command ended, Leader() = %+v, %v; want no leader: dlock resigns", l, err)
	}
}

// TestElectLostAndSignal deletes the seat under a running command: dlock
// terminates it, campaigns again, and runs it again in a new term. Then a
// SIGTERM to dlock is passed on to the command, whose status dlock exits
// with.
func TestElectLostAndSignal(t *testing.T) {
	t.Parallel()
	srv := redistest.NewServer(t)
	log := filepath.Join(t.TempDir(), "terms")
	p := startDlock(t, nil, "elect", "--key", "svc", "--ttl", "1s", "--redis", srv.URL(),
		"--", "sh", "-c", `echo "$DLOCK_TERM" >> "$1"; sleep 30 & wait`, "sh", log)
	terms := func() []string {
		data, _ := os.ReadFile(log)
		return strings.Fields(string(data))
	}
	waitUntil(t, "the command to start", func() bool { return len(terms()) == 1 })
	if err := srv.Client().Del(t.Context(), "svc").Err(); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, "the command to run again", func() bool { return len(terms()) == 2 })
	got := terms()
	first, _ := strconv.Atoi(got[0])
	again, _ := strconv.Atoi(got[1])
	if first <= 0 || again <= first {
		t.Errorf("terms %v, want two increasing terms", got)
	}
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	o := p.wait(t)
	checkCode(t, o, 128+15)
	if !strings.Contains(o.stderr, `dlock: lost the leadership of "svc" (term `+got[0]+`) while "sh -c`) {
		t.Errorf("stderr = %q, want it to say the leadership was lost", o.stderr)
	}
}

func TestElectUsage(t *testing.T) {
	t.Parallel()
	tests := []struct {
		args   []string
		code   int
		stderr string
	}{
		{[]string{"elect"}, exitUsage, "dlock elect: no command given; put it after --"},
		{[]string{"elect", "--key", "k", "--"}, exitUsage, "no command given"},
		{[]string{"elect", "--", "true"}, exitUsage, "--key is required"},
		{[]string{"elect", "--key", "k", "x", "--", "true"}, exitUsage, `unexpected argument "x" before --`},
		{[]string{"elect", "--key", "k", "--ttl", "1ms", "--", "true"}, exitUsage, "--ttl must be at least 100ms"},
		{[]string{"elect", "--key", "k", "--grace", "-1s", "--", "true"}, exitUsage, "--grace must not be negative"},
		{[]string{"elect", "--key", "k", "--value", strings.Repeat("v", 1025), "--", "true"}, exitUsage, "--value is 1025 bytes long"},
		{[]string{"elect", "--key", "k", "--redis", "redis://127.0.0.1:1/0", "--", "true"}, exitUnavailable, "cannot reach redis"},
	}
	for _, tt := range tests {
		code, stdout, stderr := runCLI(t, tt.args...)
		if code != tt.code || !strings.Contains(stderr, tt.stderr) || stdout != "" {
			t.Errorf("dlock %s = %d, stdout %q, stderr %q; want %d and %q", strings.Join(tt.args, " "), code, stdout, stderr, tt.code, tt.stderr)
		}
	}
	code, stdout, _ := runCLI(t, "elect", "--help")
	for _, want := range []string{"-key KEY", "-value", "-ttl", "-grace", "DLOCK_TERM", "campaigns again",
		"exits with COMMAND's status", "\n  128+N "} {
		if code != exitOK || !strings.Contains(stdout, want) {
			t.Errorf("elect --help does not contain %q", want)
		}
	}
}

// TestElectCommandFails checks that a command that cannot start ends
// dlock with 127, and resigns.
func TestElectCommandFails(t *testing.T) {
	t.Parallel()
	srv := redistest.NewServer(t)
	o := runDlock(t, nil, "elect", "--key", "svc", "--redis", srv.URL(), "--", "dlock-test-no-such-command")
	checkCode(t, o, 127)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	if _, err := candidate(t, srv, "svc").Leader(ctx); !errors.Is(err, election.ErrNoLeader) {
		t.Errorf("Leader() after the command failed: %v, want no leader", err)
	}
}
