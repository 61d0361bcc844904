//go:build unix

package main

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/dlock-go/dlock/redistest"
	"github.com/redis/go-redis/v9"
)

// The tests of the run verb run the dlock binary built by TestMain as
// separate processes, as cron would, against real redis-server processes.
// They check exit statuses against numbers, not the constants: the numbers
// are what cron and scripts see.

// A dlockProcess is a dlock started by startDlock.
type dlockProcess struct {
	cmd            *exec.Cmd
	stdout, stderr bytes.Buffer
	start          time.Time
}

// An outcome is how a dlock process ended.
type outcome struct {
	code           int
	stdout, stderr string
	took           time.Duration
}

// startDlock starts dlock with args. Its environment is the test's, without
// the DLOCK_ variables, plus env. It is killed if it still runs when the
// test ends, or after a minute.
func startDlock(t *testing.T, env []string, args ...string) *dlockProcess {
	t.Helper()
	return startDlockWithInput(t, nil, env, args...)
}

// startDlockWithInput is startDlock with stdin as dlock's standard input.
func startDlockWithInput(t *testing.T, stdin io.Reader, env []string, args ...string) *dlockProcess {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	t.Cleanup(cancel)
	p := &dlockProcess{cmd: exec.CommandContext(ctx, dlockBinary, args...)}
	p.cmd.Stdin = stdin
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "DLOCK_") {
			p.cmd.Env = append(p.cmd.Env, kv)
		}
	}
	p.cmd.Env = append(p.cmd.Env, env...)
	p.cmd.Stdout, p.cmd.Stderr = &p.stdout, &p.stderr
	p.cmd.WaitDelay = 5 * time.Second // a child left behind must not hang the test
	p.start = time.Now()
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	return p
}

// wait waits for p to exit.
func (p *dlockProcess) wait(t *testing.T) outcome {
	t.Helper()
	err := p.cmd.Wait()
	took := time.Since(p.start)
	var exitErr *exec.ExitError
	if err != nil && !errors.As(err, &exitErr) {
		t.Fatalf("dlock %s: %v", strings.Join(p.cmd.Args[1:], " "), err)
	}
	return outcome{p.cmd.ProcessState.ExitCode(), p.stdout.String(), p.stderr.String(), took}
}

// runDlock runs dlock with args and env (see startDlock) and waits for it.
func runDlock(t *testing.T, env []string, args ...string) outcome {
	t.Helper()
	return startDlock(t, env, args...).wait(t)
}

// checkCode fails the test if o.code is not want.
func checkCode(t *testing.T, o outcome, want int) {
	t.Helper()
	if o.code != want {
		t.Errorf("exit status %d, want %d\nstdout:\n%s\nstderr:\n%s", o.code, want, o.stdout, o.stderr)
	}
}

func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// gated is a shell script for "sh -c": it touches its first argument, so
// that the test knows it runs, then waits until its second exists.
const gated = `touch "$1"; while [ ! -e "$2" ]; do sleep 0.02; done`

// TestRunOneAtATime runs six dlocks at once on one key: their commands run
// one after the other, never two at a time.
func TestRunOneAtATime(t *testing.T) {
	t.Parallel()
	srv := redistest.NewServer(t)
	log := filepath.Join(t.TempDir(), "log")
	const script = `echo start >> "$1"; sleep 0.1; echo end >> "$1"`
	var procs []*dlockProcess
	for range 6 {
		procs = append(procs, startDlock(t, nil, "run", "--wait", "5s", "--key", "job", "--redis", srv.URL(),
			"--", "sh", "-c", script, "sh", log))
	}
	for _, p := range procs {
		checkCode(t, p.wait(t), 0)
	}
	data, err := os.ReadFile(log)
	if err != nil {
		t.Fatal(err)
	}
	want := strings.Repeat("start\nend\n", 6)
	if string(data) != want {
		t.Errorf("the commands overlapped or did not all run; their log:\n%s", data)
	}
}

// TestRunTryOnce checks that without --wait, dlock does not run its command
// while another holder has the lock, exits with 75 or --conflict-exit-code,
// and says nothing about it when stderr is not a terminal.
func TestRunTryOnce(t *testing.T) {
	t.Parallel()
	srv := redistest.NewServer(t)
	dir := t.TempDir()
	started, done, marker := filepath.Join(dir, "started"), filepath.Join(dir, "done"), filepath.Join(dir, "marker")
	holder := startDlock(t, nil, "run", "--key", "job", "--redis", srv.URL(), "--", "sh", "-c", gated, "sh", started, done)
	waitUntil(t, "the first command to start", func() bool { return exists(started) })

	var others []*dlockProcess
	for range 3 {
		others = append(others, startDlock(t, nil, "run", "--wait", "0", "--key", "job", "--redis", srv.URL(), "--", "touch", marker))
	}
	custom := startDlock(t, nil, "run", "--conflict-exit-code", "9", "--key", "job", "--redis", srv.URL(), "--", "touch", marker)
	for _, p := range others {
		o := p.wait(t)
		checkCode(t, o, 75)
		if o.stderr != "" || o.stdout != "" {
			t.Errorf("a conflict printed something:\nstdout: %s\nstderr: %s", o.stdout, o.stderr)
		}
	}
	checkCode(t, custom.wait(t), 9)
	if exists(marker) {
		t.Error("a command ran while another held the lock")
	}
	if err := os.WriteFile(done, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	checkCode(t, holder.wait(t), 0)
}

// TestRunExitStatus checks that dlock exits with its command's status, as a
// shell would report it, and releases the lock after each.
func TestRunExitStatus(t *testing.T) {
	t.Parallel()
	srv := redistest.NewServer(t)
	rdb := srv.Client()
	notExecutable := filepath.Join(t.TempDir(), "script")
	if err := os.WriteFile(notExecutable, []byte("#!/bin/sh\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		command []string
		want    int
		stderr  string
	}{
		{"success", []string{"true"}, 0, ""},
		{"exit 7", []string{"sh", "-c", "exit 7"}, 7, ""},
		{"killed", []string{"sh", "-c", "kill -KILL $$"}, 128 + 9, ""},
		{"not found", []string{"dlock-test-no-such-command"}, 127, `dlock: cannot run "dlock-test-no-such-command": `},
		{"not executable", []string{notExecutable}, 126, "permission denied"},
	}
	for _, tt := range tests {
		args := append([]string{"run", "--key", "job", "--redis", srv.URL(), "--"}, tt.command...)
		o := runDlock(t, nil, args...)
		if o.code != tt.want || !strings.Contains(o.stderr, tt.stderr) {
			t.Errorf("%s: exit status %d, stderr %q; want %d and %q", tt.name, o.code, o.stderr, tt.want, tt.stderr)
		}
		if n := rdb.Exists(t.Context(), "job").Val(); n != 0 {
			t.Errorf("%s: the lock was not released", tt.name)
		}
	}
}

// TestRunStreams checks that the command gets dlock's standard streams.
func TestRunStreams(t *testing.T) {
	t.Parallel()
	srv := redistest.NewServer(t)
	p := startDlockWithInput(t, strings.NewReader("to the command\n"), nil,
		"run", "--key", "job", "--redis", srv.URL(), "--", "sh", "-c", "cat; echo from the command >&2")
	o := p.wait(t)
	checkCode(t, o, 0)
	if o.stdout != "to the command\n" || o.stderr != "from the command\n" {
		t.Errorf("stdout %q, stderr %q; want what the command read, and what it wrote on stderr", o.stdout, o.stderr)
	}
}

// TestRunUsageStatus checks the exit status of a usage error, and of an
// unreachable Redis, as cron sees them. TestRunUsage has the messages.
func TestRunUsageStatus(t *testing.T) {
	t.Parallel()
	checkCode(t, runDlock(t, nil, "run", "--key", "job", "true"), 64)
	checkCode(t, runDlock(t, nil, "run", "--key", "job", "--redis", "redis://127.0.0.1:1/0", "--", "true"), 69)
}

// TestRunMinHold checks that --min-hold keeps the lock of a quick command
// until that long after it was obtained, so that a late host does not run
// it again; and that without it the lock is released.
func TestRunMinHold(t *testing.T) {
	t.Parallel()
	srv := redistest.NewServer(t)
	rdb := srv.Client()
	checkCode(t, runDlock(t, nil, "run", "--min-hold", "2s", "--key", "held", "--redis", srv.URL(), "--", "true"), 0)
	if pttl := rdb.PTTL(t.Context(), "held").Val(); pttl <= time.Second || pttl > 2*time.Second {
		t.Errorf("after the run the lock has %v left, want about 2s", pttl)
	}
	marker := filepath.Join(t.TempDir(), "marker")
	checkCode(t, runDlock(t, nil, "run", "--wait", "0", "--key", "held", "--redis", srv.URL(), "--", "touch", marker), 75)
	if exists(marker) {
		t.Error("a late host ran the command again")
	}

	checkCode(t, runDlock(t, nil, "run", "--key", "free", "--redis", srv.URL(), "--", "true"), 0)
	if n := rdb.Exists(t.Context(), "free").Val(); n != 0 {
		t.Error("without --min-hold the lock was not released")
	}
}

// TestRunEnvironment checks what the command finds in its environment, and
// that -v says what happens without printing the token.
func TestRunEnvironment(t *testing.T) {
	t.Parallel()
	srv := redistest.NewServer(t)
	rdb := srv.Client()
	dir := t.TempDir()
	envFile, ready, done := filepath.Join(dir, "env"), filepath.Join(dir, "ready"), filepath.Join(dir, "done")
	script := `printf '%s\n' "$DLOCK_KEY" "$DLOCK_TOKEN" "$DLOCK_FENCE" "$INHERITED" > "$3"; ` + gated
	p := startDlock(t, []string{"INHERITED=yes"}, "run", "-v", "--key", "report:2026-11-21", "--redis", srv.URL(),
		"--", "sh", "-c", script, "sh", ready, done, envFile)
	waitUntil(t, "the command to start", func() bool { return exists(ready) })

	data, err := os.ReadFile(envFile)
	if err != nil {
		t.Fatal(err)
	}
	env := strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")
	if len(env) != 4 {
		t.Fatalf("the command wrote %q, want 4 lines", data)
	}
	key, token, fence, inherited := env[0], env[1], env[2], env[3]
	if key != "report:2026-11-21" {
		t.Errorf("DLOCK_KEY = %q", key)
	}
	if value := rdb.Get(t.Context(), key).Val(); token == "" || !strings.HasPrefix(value, token+":") {
		t.Errorf("DLOCK_TOKEN = %q, but the key holds %q", token, value)
	}
	if n, err := strconv.ParseInt(fence, 10, 64); err != nil || n <= 0 {
		t.Errorf("DLOCK_FENCE = %q, want a positive integer", fence)
	}
	if inherited != "yes" {
		t.Errorf("the command did not get dlock's environment")
	}
	if err := os.WriteFile(done, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	o := p.wait(t)
	checkCode(t, o, 0)
	for _, want := range []string{`dlock: obtained the lock on "report:2026-11-21" (fence ` + fence, "holder " + sha256Prefix(token) + ")", "dlock: started ", `dlock: released the lock on "report:2026-11-21"`} {
		if !strings.Contains(o.stderr, want) {
			t.Errorf("-v did not say %q:\n%s", want, o.stderr)
		}
	}
	if strings.Contains(o.stderr, token) {
		t.Errorf("-v printed the token:\n%s", o.stderr)
	}
}

// TestRunRedisFromEnvironment checks DLOCK_REDIS and DLOCK_REDIS_PASSWORD,
// and that the password is never printed.
func TestRunRedisFromEnvironment(t *testing.T) {
	t.Parallel()
	srv := redistest.NewServer(t, redistest.WithArgs("--requirepass", "s3cret"))
	url := "redis://" + srv.Addr() + "/0"
	run := []string{"run", "--key", "job", "--", "true"}

	checkCode(t, runDlock(t, []string{"DLOCK_REDIS=" + url, "DLOCK_REDIS_PASSWORD=s3cret"}, run...), 0)

	o := runDlock(t, []string{"DLOCK_REDIS=" + url, "DLOCK_REDIS_PASSWORD=n0tit"}, run...)
	checkCode(t, o, 69)
	if !strings.Contains(o.stderr, "check the user and password in the URL and DLOCK_REDIS_PASSWORD") {
		t.Errorf("a wrong password: stderr does not say what to check:\n%s", o.stderr)
	}

	o = runDlock(t, []string{"DLOCK_REDIS=redis://127.0.0.1:1/0", "DLOCK_REDIS_PASSWORD=s3cret"}, run...)
	checkCode(t, o, 69)
	if want := "dlock: cannot reach redis at redis://127.0.0.1:1/0: "; !strings.HasPrefix(o.stderr, want) ||
		!strings.HasSuffix(o.stderr, "is redis-server running, and is DLOCK_REDIS right?\n") {
		t.Errorf("stderr = %q, want %q... is redis-server running, and is DLOCK_REDIS right?", o.stderr, want)
	}

	// Two nodes: a quorum needs both.
	o = runDlock(t, []string{"DLOCK_REDIS=" + url + ", redis://127.0.0.1:1/0", "DLOCK_REDIS_PASSWORD=s3cret"}, run...)
	checkCode(t, o, 69)
	if want := "dlock: only 1 of the 2 Redis nodes answered, and a Redlock quorum needs 2:\n" +
		"  cannot reach redis at redis://127.0.0.1:1/0: dial tcp 127.0.0.1:1: connect: connection refused\n" +
		"dlock: is redis-server running, and is DLOCK_REDIS right?\n"; o.stderr != want {
		t.Errorf("stderr = %q, want %q", o.stderr, want)
	}

	for _, o := range []outcome{
		runDlock(t, []string{"DLOCK_REDIS=redis://:s3cret@127.0.0.1:1/0"}, run...),
		runDlock(t, []string{"DLOCK_REDIS=redis://u:s3cret@127.0.0.1:bad/0"}, run...),
	} {
		if strings.Contains(o.stdout+o.stderr, "s3cret") {
			t.Errorf("printed the password:\n%s%s", o.stdout, o.stderr)
		}
	}
}

// TestRunNoPasswordInLogs runs with -v on a server that needs a password,
// given in the URL: nothing printed holds it.
func TestRunNoPasswordInLogs(t *testing.T) {
	t.Parallel()
	srv := redistest.NewServer(t, redistest.WithArgs("--requirepass", "s3cret"))
	url := "redis://default:s3cret@" + srv.Addr() + "/0"
	rdb := srv.Client(func(o *redis.Options) { o.Password = "s3cret" })
	rdb.Set(t.Context(), "job", "another holder", 300*time.Millisecond)
	o := runDlock(t, nil, "run", "-v", "--wait", "5s", "--key", "job", "--redis", url, "--", "true")
	checkCode(t, o, 0)
	if strings.Contains(o.stdout+o.stderr, "s3cret") {
		t.Errorf("printed the password:\n%s%s", o.stdout, o.stderr)
	}
}
