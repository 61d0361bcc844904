//go:build unix

package main

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/dlock-go/dlock/redistest"
	"github.com/redis/go-redis/v9"
)

// The run verb on a Redlock quorum: several --redis URLs, three real
// redis-servers, the dlock binary as cron would start it.

// quorumArgs returns a --redis flag for each of srvs.
func quorumArgs(srvs []*redistest.Server) []string {
	var args []string
	for _, s := range srvs {
		args = append(args, "--redis", s.URL())
	}
	return args
}

// runArgs returns the command line of dlock run with flags, the --redis
// flags of srvs, and command.
func runArgs(srvs []*redistest.Server, flags []string, command ...string) []string {
	args := append([]string{"run"}, flags...)
	args = append(args, quorumArgs(srvs)...)
	return append(append(args, "--"), command...)
}

// values returns the value of key on each of srvs, "" where it is missing
// or the server is down.
func values(t *testing.T, srvs []*redistest.Server, key string) []string {
	t.Helper()
	var got []string
	for _, s := range srvs {
		if !s.Running() {
			got = append(got, "")
			continue
		}
		got = append(got, s.Client().Get(t.Context(), key).Val())
	}
	return got
}

// TestRunQuorum runs a command under a lock on three nodes: the lock is on
// all three while it runs, with DLOCK_TOKEN as its value, and released on
// all three after; with --min-hold it stays on all three, and a late run
// finds it taken.
func TestRunQuorum(t *testing.T) {
	t.Parallel()
	srvs := redistest.NewServers(t, 3)
	dir := t.TempDir()
	ready, done, tokenFile := filepath.Join(dir, "ready"), filepath.Join(dir, "done"), filepath.Join(dir, "token")
	script := `printf '%s' "$DLOCK_TOKEN" > "$3"; ` + gated
	p := startDlock(t, nil, runArgs(srvs, []string{"-v", "--key", "job"}, "sh", "-c", script, "sh", ready, done, tokenFile)...)
	waitUntil(t, "the command to start", func() bool { return exists(ready) })
	token, err := os.ReadFile(tokenFile)
	if err != nil {
		t.Fatal(err)
	}
	if got := values(t, srvs, "job"); len(token) == 0 || strings.Join(got, ",") != strings.Repeat(string(token)+",", 2)+string(token) {
		t.Errorf("while the command runs the nodes hold %q, want DLOCK_TOKEN %q on all three", got, token)
	}
	if err := os.WriteFile(done, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	o := p.wait(t)
	checkCode(t, o, 0)
	if !strings.Contains(o.stderr, `dlock: obtained the lock on "job" (fence `) || !strings.Contains(o.stderr, `dlock: released the lock on "job"`) {
		t.Errorf("-v did not say it obtained and released the lock:\n%s", o.stderr)
	}
	if got := values(t, srvs, "job"); strings.Join(got, "") != "" {
		t.Errorf("after the run the nodes hold %q, want the lock released on all", got)
	}

	checkCode(t, runDlock(t, nil, runArgs(srvs, []string{"--min-hold", "2s", "--key", "held"}, "true")...), 0)
	for i, s := range srvs {
		if pttl := s.Client().PTTL(t.Context(), "held").Val(); pttl <= time.Second || pttl > 2*time.Second {
			t.Errorf("node %d: after the run the lock has %v left, want about 2s (--min-hold)", i, pttl)
		}
	}
	marker := filepath.Join(dir, "marker")
	checkCode(t, runDlock(t, nil, runArgs(srvs, []string{"--key", "held"}, "touch", marker)...), 75)
	if exists(marker) {
		t.Error("a late host ran the command again")
	}
}

// TestRunQuorumOneAtATime runs five dlocks at once on one key and a quorum:
// their commands never overlap.
func TestRunQuorumOneAtATime(t *testing.T) {
	t.Parallel()
	srvs := redistest.NewServers(t, 3)
	log := filepath.Join(t.TempDir(), "log")
	const script = `echo start >> "$1"; sleep 0.1; echo end >> "$1"`
	var procs []*dlockProcess
	for range 5 {
		procs = append(procs, startDlock(t, nil, runArgs(srvs, []string{"--wait", "20s", "--key", "job"}, "sh", "-c", script, "sh", log)...))
	}
	for _, p := range procs {
		checkCode(t, p.wait(t), 0)
	}
	data, err := os.ReadFile(log)
	if err != nil {
		t.Fatal(err)
	}
	if want := strings.Repeat("start\nend\n", 5); string(data) != want {
		t.Errorf("the commands overlapped or did not all run; their log:\n%s", data)
	}
}

// TestRunQuorumNodesDown kills nodes of a quorum of three: with one down a
// run works, and says nothing of it unless asked (-v); with two down it
// exits 69, naming the nodes it could not reach.
func TestRunQuorumNodesDown(t *testing.T) {
	t.Parallel()
	srvs := redistest.NewServers(t, 3)
	srvs[0].Kill()
	o := runDlock(t, nil, runArgs(srvs, []string{"--key", "job"}, "true")...)
	checkCode(t, o, 0)
	if o.stderr != "" {
		t.Errorf("with a node down, a run without -v printed:\n%s", o.stderr)
	}
	o = runDlock(t, nil, runArgs(srvs, []string{"-v", "--key", "job"}, "true")...)
	checkCode(t, o, 0)
	if want := "dlock: warning: cannot reach redis at " + srvs[0].URL() + ": "; !strings.HasPrefix(o.stderr, want) ||
		!strings.Contains(o.stderr, "; going on with the 2 of 3 nodes that answered (a quorum needs 2)\n") {
		t.Errorf("-v with a node down: stderr = %q, want %q...; going on with the 2 of 3 nodes that answered", o.stderr, want)
	}

	srvs[1].Kill()
	start := time.Now()
	o = runDlock(t, nil, runArgs(srvs, []string{"--key", "job"}, "true")...)
	checkCode(t, o, 69)
	want := "dlock: only 1 of the 3 Redis nodes answered, and a Redlock quorum needs 2:\n" +
		"  cannot reach redis at " + srvs[0].URL() + ": dial tcp " + srvs[0].Addr() + ": connect: connection refused\n" +
		"  cannot reach redis at " + srvs[1].URL() + ": dial tcp " + srvs[1].Addr() + ": connect: connection refused\n" +
		"dlock: is redis-server running, and is --redis right?\n"
	if o.stderr != want {
		t.Errorf("with two nodes down: stderr = %q, want %q", o.stderr, want)
	}
	// go-redis would retry a refused dial for 5s a node (its dial timeout)
	// if dlock let it: what matters is that it does not.
	if took := time.Since(start); took >= 10*time.Second {
		t.Errorf("took %v to give up, want at once, not after retrying the dead nodes", took)
	}
}

// TestRunQuorumLost kills two nodes of three under a running command: the
// lock can no longer be renewed on a quorum, and dlock terminates the
// command and exits 76 within about a ttl.
func TestRunQuorumLost(t *testing.T) {
	t.Parallel()
	srvs := redistest.NewServers(t, 3)
	ready := filepath.Join(t.TempDir(), "ready")
	p := startDlock(t, nil, runArgs(srvs, []string{"--ttl", "1s", "--key", "job"}, "sh", "-c", `touch "$1"; sleep 30`, "sh", ready)...)
	waitUntil(t, "the command to start", func() bool { return exists(ready) })
	srvs[0].Kill()
	time.Sleep(time.Second) // renewed on the two others meanwhile
	srvs[1].Kill()
	killed := time.Now()
	o := p.wait(t)
	checkCode(t, o, 76)
	if took := time.Since(killed); took >= 30*time.Second {
		t.Errorf("took %v after the second node was killed to end: the command ran its course, the loss was not acted on", took)
	}
	if want := `dlock: lost the lock on "job" while "sh -c touch \"$1\"; sleep 30 sh `; !strings.HasPrefix(o.stderr, want) ||
		!strings.HasSuffix(o.stderr, "; terminating it\n") {
		t.Errorf("stderr = %q, want %q...; terminating it", o.stderr, want)
	}
}

// TestInspectQuorum checks status, list, release --force and check on a
// quorum of three, with all nodes up and with one down.
func TestInspectQuorum(t *testing.T) {
	t.Parallel()
	srvs := redistest.NewServers(t, 3)
	redisFlags := quorumArgs(srvs)
	verb := func(args ...string) []string { return append(append(args[:1:1], redisFlags...), args[1:]...) }
	dir := t.TempDir()
	ready, done := filepath.Join(dir, "ready"), filepath.Join(dir, "never")
	holder := startDlock(t, nil, runArgs(srvs, []string{"--ttl", "1s", "--key", "job:a"}, "sh", "-c", gated, "sh", ready, done)...)
	waitUntil(t, "the command to start", func() bool { return exists(ready) })
	token := values(t, srvs, "job:a")[0]
	// A lock on one node only is no lock of the quorum.
	srvs[2].Client().Set(t.Context(), "dlock:fence{job:b}", 1, time.Minute)
	srvs[2].Client().Set(t.Context(), "job:b", "a minority", time.Minute)

	for _, down := range []bool{false, true} {
		if down {
			srvs[0].Kill()
		}
		code, out, errOut := runCLI(t, verb("status", "job:a")...)
		if code != exitOK || !regexp.MustCompile(`(?m)^held: +yes\n(.*\n)*holder: +`+sha256Prefix(token)+"$").MatchString(out) {
			t.Errorf("down %t: status of the held lock = %d, %q, %q", down, code, out, errOut)
		}
		if warned := strings.Contains(errOut, "dlock: warning: cannot reach redis at "+srvs[0].URL()); warned != down {
			t.Errorf("down %t: status warned of a node down: %t; stderr %q", down, warned, errOut)
		}
		code, out, _ = runCLI(t, verb("status", "--json", "job:b")...)
		if code != exitNone || !strings.Contains(out, `"held":false`) {
			t.Errorf("down %t: status of a lock on one node = %d, %q; want not held", down, code, out)
		}
		code, out, errOut = runCLI(t, verb("list")...)
		if lines := strings.Split(strings.TrimSpace(out), "\n"); code != exitOK || len(lines) != 2 || !strings.HasPrefix(lines[1], `"job:a" `) {
			t.Errorf("down %t: list = %d, %q, %q; want job:a alone", down, code, out, errOut)
		}
		code, out, errOut = runCLI(t, verb("check")...)
		if n := strings.Count(out, "appendonly no"); code != exitFail || n != 3-countTrue(down) {
			t.Errorf("down %t: check = %d, %q, %q; want 1, a warning about each node up", down, code, out, errOut)
		}
		if mentions := strings.Contains(out, "warning: cannot reach redis at "+srvs[0].URL()+": ") &&
			strings.Contains(out, ": a Redlock quorum of 3 nodes needs 2 of them, and 2 answered\n"); mentions != down {
			t.Errorf("down %t: check warned of the node down: %t; stdout %q", down, mentions, out)
		}
	}

	code, out, errOut := runCLI(t, verb("release", "--force", "job:a")...)
	if code != exitOK || !strings.HasPrefix(out, "released \"job:a\", held by ") || !strings.HasSuffix(out, "; its holder, if still running, is no longer protected\n") {
		t.Errorf("release --force = %d, %q, %q", code, out, errOut)
	}
	if got := values(t, srvs, "job:a"); strings.Join(got, "") != "" {
		t.Errorf("after release --force the nodes hold %q", got)
	}
	code, out, _ = runCLI(t, verb("release", "--force", "--json", "job:a")...)
	if code != exitOK || strings.TrimSpace(out) != `{"key":"job:a","released":false}` {
		t.Errorf("release --force of a free key = %d, %q", code, out)
	}
	checkCode(t, holder.wait(t), 76) // its lock was deleted under it
}

func countTrue(b bool) int {
	if b {
		return 1
	}
	return 0
}

// TestHoldUntilQuorum checks --min-hold on a quorum with a node down: the
// hold is set on the others, and a lock taken over is left alone.
func TestHoldUntilQuorum(t *testing.T) {
	t.Parallel()
	srvs := redistest.NewServers(t, 3)
	var rdbs []*redis.Client
	for _, s := range srvs {
		rdbs = append(rdbs, s.Client(func(o *redis.Options) { quorumNode(o) }))
	}
	obtain := func(key string) held {
		locker, err := newLocker(rdbs, time.Second)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { locker.Close() })
		lock, err := locker.TryObtain(t.Context(), key, time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		return held{lock, time.Now()}
	}
	h := obtain("job")
	srvs[0].Kill()
	if err := holdUntil(t.Context(), h, time.Now().Add(2*time.Second)); err != nil {
		t.Fatal(err)
	}
	for _, s := range srvs[1:] {
		if pttl := s.Client().PTTL(t.Context(), "job").Val(); pttl <= time.Second || pttl > 2*time.Second {
			t.Errorf("after the hold began the key has %v left, want about 2s", pttl)
		}
	}

	h = obtain("other")
	for _, s := range srvs[1:] {
		s.Client().Set(context.Background(), "other", "another holder", time.Minute)
	}
	if err := holdUntil(t.Context(), h, time.Now().Add(2*time.Second)); err == nil {
		t.Error("holdUntil of a lock taken over on a quorum succeeded")
	}
	if pttl := srvs[1].Client().PTTL(t.Context(), "other").Val(); pttl < 59*time.Second {
		t.Errorf("holdUntil changed another holder's lock: %v left", pttl)
	}
}

// TestRunQuorumBusyNodeDown runs dlock on a lock that another run holds,
// with a node of the quorum down: the lock is held by a majority, so dlock
// exits 75, at once or after --wait, as with every node up.
func TestRunQuorumBusyNodeDown(t *testing.T) {
	t.Parallel()
	// (This was a library bug: with the dead node's error and one "held",
	// the acquire counted the node not heard from yet as failed, and
	// returned a QuorumError: exit 69, and --wait gave up at once.)
	srvs := redistest.NewServers(t, 3)
	dir := t.TempDir()
	ready, done, marker := filepath.Join(dir, "ready"), filepath.Join(dir, "done"), filepath.Join(dir, "marker")
	srvs[0].Kill()
	holder := startDlock(t, nil, runArgs(srvs, []string{"--key", "job"}, "sh", "-c", gated, "sh", ready, done)...)
	waitUntil(t, "the holder's command to start", func() bool { return exists(ready) })

	o := runDlock(t, nil, runArgs(srvs, []string{"--key", "job"}, "touch", marker)...)
	checkCode(t, o, 75)
	o = runDlock(t, nil, runArgs(srvs, []string{"--wait", "1s", "--key", "job"}, "touch", marker)...)
	checkCode(t, o, 75)
	if o.took < time.Second {
		t.Errorf("--wait 1s gave up after %v", o.took)
	}
	if exists(marker) {
		t.Error("a command ran while another held the lock")
	}
	if err := os.WriteFile(done, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	checkCode(t, holder.wait(t), 0)
}

// TestRunQuorumPassword runs dlock on a quorum of servers that need a
// password: DLOCK_REDIS_PASSWORD applies to each URL of DLOCK_REDIS, a
// wrong one is reported for each node, and no password is ever printed,
// also with -v and a node down.
func TestRunQuorumPassword(t *testing.T) {
	t.Parallel()
	srvs := redistest.NewServers(t, 3, redistest.WithArgs("--requirepass", "s3cret"))
	var urls, withPassword []string
	for _, s := range srvs {
		urls = append(urls, "redis://"+s.Addr()+"/0")
		withPassword = append(withPassword, "--redis", "redis://default:s3cret@"+s.Addr()+"/0")
	}
	env := "DLOCK_REDIS=" + strings.Join(urls, ",")
	run := []string{"run", "-v", "--key", "job", "--", "true"}

	o := runDlock(t, []string{env, "DLOCK_REDIS_PASSWORD=s3cret"}, run...)
	checkCode(t, o, 0)
	o2 := runDlock(t, []string{env, "DLOCK_REDIS_PASSWORD=n0tit"}, run...)
	checkCode(t, o2, 69)
	if want := "dlock: only 0 of the 3 Redis nodes answered, and a Redlock quorum needs 2:\n  redis at " + urls[0] + " refused: WRONGPASS"; !strings.HasPrefix(o2.stderr, want) ||
		!strings.HasSuffix(o2.stderr, "\ndlock: check the user and password in the URL and DLOCK_REDIS_PASSWORD\n") {
		t.Errorf("a wrong password: stderr = %q, want %q... check the user and password in the URL and DLOCK_REDIS_PASSWORD", o2.stderr, want)
	}
	srvs[2].Kill()
	o3 := runDlock(t, nil, append(append([]string{"run", "-v", "--key", "job"}, withPassword...), "--", "true")...)
	checkCode(t, o3, 0)
	if !strings.Contains(o3.stderr, "dlock: warning: cannot reach redis at redis://default:xxxxx@"+srvs[2].Addr()+"/0: ") {
		t.Errorf("-v with a node down does not warn about it:\n%s", o3.stderr)
	}
	for _, o := range []outcome{o, o2, o3} {
		if strings.Contains(o.stdout+o.stderr, "s3cret") || strings.Contains(o.stdout+o.stderr, "n0tit") {
			t.Errorf("printed a password:\n%s%s", o.stdout, o.stderr)
		}
	}
}
