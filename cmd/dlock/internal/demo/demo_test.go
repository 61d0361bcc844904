package demo

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/dlock-go/dlock"
	"github.com/dlock-go/dlock/redistest"
	"github.com/redis/go-redis/v9"
)

// TestDemoReportsBrokenInvariant checks the failure path of the table with
// made-up cases: a broken invariant and a case that cannot run.
func TestDemoReportsBrokenInvariant(t *testing.T) {
	cases := []scenario{
		{"fine", "dlock", func(context.Context, *env) result { return verdict("all good", "fine", nil) }},
		{"oversold", "stock", func(context.Context, *env) result {
			return verdict("1001 sold", "no oversell", []string{"1001 sold of 1000"})
		}},
		{"no redis", "jobs", func(context.Context, *env) result { return failed(errors.New("connection refused")) }},
	}
	var stdout, stderr bytes.Buffer
	if (&env{}).runAll(t.Context(), cases, &stdout, &stderr) {
		t.Error("runAll reported that every invariant held")
	}
	for _, want := range []string{"ok: fine", "BROKEN: 1001 sold of 1000", "FAILED"} {
		if !strings.Contains(stdout.String(), want) {
			t.Errorf("stdout does not contain %q:\n%s", want, stdout.String())
		}
	}
	for _, want := range []string{"no redis: connection refused", "broken or failed: oversold, no redis"} {
		if !strings.Contains(stderr.String(), want) {
			t.Errorf("stderr does not contain %q:\n%s", want, stderr.String())
		}
	}
}

// TestDemoRowsAsCasesEnd checks that the table shows each case's row as
// the case ends, before the next one starts, under the header, with the
// package the case uses.
func TestDemoRowsAsCasesEnd(t *testing.T) {
	var stdout, stderr bytes.Buffer
	var seen []string // what stdout held when each case started
	run := func(happened string) func(context.Context, *env) result {
		return func(context.Context, *env) result {
			seen = append(seen, stdout.String())
			return verdict(happened, "fine", nil)
		}
	}
	cases := []scenario{
		{"first", "idempotency", run("one line")},
		{"  (second)", "jobs", run("two\nlines")},
		{"third", "election", run("last")},
	}
	if !(&env{}).runAll(t.Context(), cases, &stdout, &stderr) {
		t.Fatalf("runAll reported a broken invariant; stderr:\n%s", stderr.String())
	}
	header := "CASE        PACKAGE      WHAT HAPPENED"
	rows := []string{
		"first       idempotency  one line",
		"  (second)  jobs         two",
		"                         lines\n",
		"third       election     last",
	}
	if !strings.HasPrefix(seen[0], header) || strings.Count(seen[0], "\n") != 1 {
		t.Errorf("before the first case, stdout = %q, want the header alone", seen[0])
	}
	if !strings.Contains(seen[1], rows[0]) || strings.Contains(seen[1], "second") {
		t.Errorf("before the second case, stdout = %q, want the first row alone", seen[1])
	}
	if !strings.Contains(seen[2], rows[1]) || !strings.Contains(seen[2], rows[2]) || strings.Contains(seen[2], "third") {
		t.Errorf("before the third case, stdout = %q, want the second row", seen[2])
	}
	out := stdout.String()
	if !strings.Contains(out, rows[3]) || !strings.Contains(out, "all invariants hold") {
		t.Errorf("stdout = %q, want the third row and the verdict", out)
	}
	for line := range strings.Lines(out) {
		if strings.HasSuffix(line, " \n") {
			t.Errorf("line %q ends with spaces", line)
		}
	}
}

// testDemo returns the env of the cases on rdb, as Run makes it, for running cases
// one by one.
func testDemo(t *testing.T, rdb *redis.Client) *env {
	t.Helper()
	locker := dlock.New(rdb)
	t.Cleanup(func() { locker.Close() })
	return &env{rdb: rdb, locker: locker, prefix: "dlock-demo:" + t.Name() + ":"}
}

// demoBackends returns the Redis servers the cases run on in the tests: the
// embedded one and a real one.
func demoBackends(t *testing.T) map[string]*redis.Client {
	t.Helper()
	embedded, _ := embeddedLocker(t)
	return map[string]*redis.Client{"embedded": embedded, "redis-server": redistest.NewServer(t).Client()}
}

// TestDemoLongJob runs the case of a job longer than its lock's ttl, and its
// contrast: renewed, the job keeps its lock; not renewed, B gets in.
func TestDemoLongJob(t *testing.T) {
	t.Parallel()
	for name, rdb := range demoBackends(t) {
		d := testDemo(t, rdb)
		r := longRenewedJob(t.Context(), d)
		if !r.ok || r.err != nil || !strings.Contains(r.happened, "B tried ") || !strings.HasSuffix(r.happened, ": never got in") {
			t.Errorf("%s: long job: %q, %q, error %v", name, r.happened, r.invariant, r.err)
		}
		r = longUnrenewedJob(t.Context(), d)
		if r.err != nil || !strings.Contains(r.happened, "lock not renewed: B got in ") {
			t.Errorf("%s: long job not renewed: %q, %q, error %v", name, r.happened, r.invariant, r.err)
		}
	}
}

// TestDemoLostLock runs the case of a worker cut off from Redis: its job is
// stopped with ErrLockLost before B takes the lock, and its late write is
// refused.
func TestDemoLostLock(t *testing.T) {
	t.Parallel()
	for name, rdb := range demoBackends(t) {
		r := lostLock(t.Context(), testDemo(t, rdb))
		if !r.ok || r.err != nil || !strings.Contains(r.happened, "before B took the lock over") ||
			!strings.HasSuffix(r.happened, "A's late write: refused") {
			t.Errorf("%s: lost lock: %q, %q, error %v", name, r.happened, r.invariant, r.err)
		}
		t.Logf("%s: %s", name, strings.ReplaceAll(r.happened, "\n", " "))
	}
}

// TestDemoCron runs the cron case: the late host finds the slot done.
func TestDemoCron(t *testing.T) {
	t.Parallel()
	for name, rdb := range demoBackends(t) {
		r := cronOnTwoHosts(t.Context(), testDemo(t, rdb))
		if !r.ok || r.err != nil || !strings.Contains(r.happened, "job ran once;\nthe 2nd host: already done") {
			t.Errorf("%s: cron: %q, %q, error %v", name, r.happened, r.invariant, r.err)
		}
	}
}

// TestDemoLeaderDies runs the case of a leader that dies: another
// candidate takes over, in a higher term.
func TestDemoLeaderDies(t *testing.T) {
	t.Parallel()
	for name, rdb := range demoBackends(t) {
		r := leaderDies(t.Context(), testDemo(t, rdb))
		if !r.ok || r.err != nil || !strings.Contains(r.happened, "died without resigning;\nnode-") {
			t.Errorf("%s: leader dies: %q, %q, error %v", name, r.happened, r.invariant, r.err)
		}
		t.Logf("%s: %s", name, strings.ReplaceAll(r.happened, "\n", " "))
	}
}

// TestDemoRedlock runs the case of a lock on a quorum of five embedded
// nodes: it survives two nodes dying, renewed, and B never gets it; after a
// third, A is told it is lost and B's attempt fails with a QuorumError.
func TestDemoRedlock(t *testing.T) {
	t.Parallel()
	r := redlockQuorum(t.Context(), &env{prefix: "dlock-demo:" + t.Name() + ":"}) // it needs no other Redis
	if !r.ok || r.err != nil || !strings.Contains(r.happened, "on the 3 left for 1.5s, B tried ") ||
		!strings.Contains(r.happened, " times: never got in;\na 3rd dies: A told the lock is lost ") ||
		!strings.Contains(r.happened, "\nB's attempt: ") || !strings.Contains(r.happened, " nodes granted the lock, 3 needed;") {
		t.Errorf("redlock: %q, %q, error %v", r.happened, r.invariant, r.err)
	}
	t.Log(strings.ReplaceAll(r.happened, "\n", " "))
}

// TestDemoRedlockVerdict checks that the redlock case reports what breaks
// its invariant.
func TestDemoRedlockVerdict(t *testing.T) {
	quorumErr := func() error {
		nodes, err := startQuorumNodes(3)
		if err != nil {
			t.Fatal(err)
		}
		defer nodes.close()
		locker, err := nodes.locker(time.Second)
		if err != nil {
			t.Fatal(err)
		}
		defer locker.Close()
		nodes.kill(0)
		nodes.kill(1)
		_, err = locker.TryObtain(t.Context(), "k", time.Second)
		return err
	}()
	tests := []struct {
		name      string
		b         quorumProbe
		aTTL      time.Duration
		aErr      error
		lost      error
		lostAfter time.Duration
		bErr      error
		want      string // in the invariant; "" if it holds
	}{
		{"holds", quorumProbe{tries: 30}, time.Second, nil, dlock.ErrLockLost, 300 * time.Millisecond, quorumErr, ""},
		{"B got in", quorumProbe{tries: 30, got: 1}, time.Second, nil, dlock.ErrLockLost, 300 * time.Millisecond, quorumErr, "B took the lock 1 times"},
		{"A not renewed", quorumProbe{tries: 30}, 0, dlock.ErrNotHeld, dlock.ErrLockLost, 300 * time.Millisecond, quorumErr, "A's lock was not held on a quorum"},
		{"A not told", quorumProbe{tries: 30}, time.Second, nil, nil, -1, quorumErr, "A was not told"},
		{"B obtained", quorumProbe{tries: 30}, time.Second, nil, dlock.ErrLockLost, 300 * time.Millisecond, nil, "want a QuorumError"},
	}
	for _, tt := range tests {
		r := redlockVerdict(tt.b, tt.aTTL, tt.aErr, tt.lost, tt.lostAfter, tt.bErr)
		if r.ok != (tt.want == "") || !strings.Contains(r.invariant, tt.want) {
			t.Errorf("%s: ok %t, invariant %q; want it to contain %q", tt.name, r.ok, r.invariant, tt.want)
		}
	}
}

// TestDemoExpiredHolder runs the case of a holder paused past its ttl: its
// release leaves B's lock alone, and SQLite refuses its late write through
// fence.Guard.
func TestDemoExpiredHolder(t *testing.T) {
	t.Parallel()
	for name, rdb := range demoBackends(t) {
		r := expiredHolder(t.Context(), testDemo(t, rdb))
		if !r.ok || r.err != nil || !strings.Contains(r.happened, "A's release: not held; A's late write: refused") ||
			!strings.HasSuffix(r.happened, "(by SQLite through fence.Guard); stored: B's report") {
			t.Errorf("%s: expired holder: %q, %q, error %v", name, r.happened, r.invariant, r.err)
		}
		t.Logf("%s: %s", name, strings.ReplaceAll(r.happened, "\n", " "))
	}
}
