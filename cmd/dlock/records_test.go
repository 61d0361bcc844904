package main

import (
	"context"
	"encoding/json"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/dlock-go/dlock"
	"github.com/dlock-go/dlock/cmd/dlock/internal/top"
	"github.com/dlock-go/dlock/election"
	"github.com/dlock-go/dlock/jobs"
	"github.com/dlock-go/dlock/redistest"
)

// packageRecords makes, on srv, what the packages keep in keys that look
// like locks: a job's done and attempt records (a run of package jobs) and
// an election's vacancy (a watch of its empty seat, until the test ends),
// and a cached value of another program. It returns their keys.
func packageRecords(t *testing.T, srv *redistest.Server) (done, attempt, vacancy, cached string) {
	t.Helper()
	ctx := context.Background()
	locker := dlock.New(srv.Client())
	t.Cleanup(func() { locker.Close() })
	slot := time.Date(2026, 11, 26, 0, 0, 0, 0, time.UTC)
	runner, err := jobs.New(locker)
	if err != nil {
		t.Fatal(err)
	}
	a, err := runner.Begin(ctx, "nightly", slot)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.Finish(ctx, nil); err != nil {
		t.Fatal(err)
	}
	done, attempt = "dlock:job:nightly@2026-11-26T00:00:00Z/done", "dlock:job:nightly@2026-11-26T00:00:00Z/attempt/1"

	watchCtx, stop := context.WithCancel(ctx)
	seat, err := election.New(locker, "scheduler")
	if err != nil {
		t.Fatal(err)
	}
	watching := seat.Observe(watchCtx)
	t.Cleanup(func() {
		stop()
		for range watching { // until Observe has let go of the vacancy
		}
	})
	<-watching // no leader
	vacancy = "dlock:vacancy:scheduler"
	waitUntil(t, "the watcher to hold the vacancy", func() bool {
		info, err := locker.Inspect(ctx, vacancy)
		return err == nil && info.Held
	})

	cached = "cache:user:1"
	if err := srv.Client().Set(ctx, cached, `{"name":"Ada"}`, time.Minute).Err(); err != nil {
		t.Fatal(err)
	}
	for _, key := range []string{done, attempt} {
		if n := srv.Client().Exists(ctx, key).Val(); n != 1 {
			t.Fatalf("package jobs made no key %q", key)
		}
	}
	return done, attempt, vacancy, cached
}

// TestReleaseRefusesRecords: release --force deletes a lock, but a
// package's record only with --record, after saying what that undoes, and
// a string dlock did not take as a lock only with --not-a-lock.
func TestReleaseRefusesRecords(t *testing.T) {
	t.Parallel()
	srv, lock := heldLock(t, "plain")
	done, attempt, vacancy, cached := packageRecords(t, srv)
	ctx := context.Background()
	exists := func(key string) bool { return srv.Client().Exists(ctx, key).Val() == 1 }

	refusals := []struct {
		key, flag string
		says      []string
	}{
		{done, "--record", []string{"the done record of job \"nightly\" in slot 2026-11-26T00:00:00Z", "the job will run again in its slot", "--record"}},
		{attempt, "--record", []string{"the record of attempt 1 of job \"nightly\"", "no longer counts against the slot's attempts"}},
		{vacancy, "--record", []string{"the vacancy of election \"scheduler\"", "--record"}},
		{cached, "--not-a-lock", []string{"a string that dlock did not take as a lock", "a cached value", "--not-a-lock"}},
	}
	for _, r := range refusals {
		code, stdout, stderr := runCLI(t, "release", "--force", "--redis", srv.URL(), r.key)
		if code != 64 || stdout != "" {
			t.Errorf("release --force %s = %d, %q; want 64, and nothing on stdout", r.key, code, stdout)
		}
		for _, want := range r.says {
			if !strings.Contains(stderr, want) {
				t.Errorf("release --force %s says %q; want it to say %q", r.key, stderr, want)
			}
		}
		if !exists(r.key) {
			t.Errorf("release --force %s deleted it", r.key)
		}
		// The other flag does not do.
		other := map[string]string{"--record": "--not-a-lock", "--not-a-lock": "--record"}[r.flag]
		if code, _, _ := runCLI(t, "release", "--force", other, "--redis", srv.URL(), r.key); code != 64 || !exists(r.key) {
			t.Errorf("release --force %s %s = %d; want 64, and the key kept", other, r.key, code)
		}
		code, stdout, stderr = runCLI(t, "release", "--force", r.flag, "--redis", srv.URL(), r.key)
		// The watcher of the empty seat takes the vacancy back.
		if code != 0 || !strings.HasPrefix(stdout, "deleted ") && !strings.HasPrefix(stdout, "released ") || r.key != vacancy && exists(r.key) {
			t.Errorf("release --force %s %s = %d, %q, %q; want 0, and the key gone", r.flag, r.key, code, stdout, stderr)
		}
	}

	code, stdout, stderr := runCLI(t, "release", "--force", "--redis", srv.URL(), "plain")
	if want := "released \"plain\", held by " + top.HolderName(defaultHolderName(), lock.Fingerprint()); code != 0 || !strings.HasPrefix(stdout, want) {
		t.Errorf("release --force plain = %d, %q, %q; want 0 and %q", code, stdout, stderr, want)
	}
	if exists("plain") {
		t.Error("release --force of a lock left it")
	}
}

// TestListHidesRecords: list leaves the packages' records out unless
// --all, says how many it left out, and what each key of a package is.
func TestListHidesRecords(t *testing.T) {
	t.Parallel()
	srv, _ := heldLock(t, "plain")
	done, attempt, vacancy, _ := packageRecords(t, srv)

	_, out, _ := runCLI(t, "status", "--redis", srv.URL(), done)
	if want := regexp.MustCompile(`(?m)^what: +the done record of job "nightly" in slot 2026-11-26T00:00:00Z`); !want.MatchString(out) {
		t.Errorf("status of a done record = %q; want it to match %s", out, want)
	}

	code, out, errOut := runCLI(t, "list", "--redis", srv.URL())
	if code != 0 || !strings.Contains(out, `"plain"`) || !strings.Contains(out, "(3 records of packages not shown") {
		t.Errorf("list = %d, %q, %q; want the lock, and 3 records not shown", code, out, errOut)
	}
	for _, key := range []string{done, attempt, vacancy} {
		if strings.Contains(out, key) {
			t.Errorf("list shows %s: %s", key, out)
		}
	}

	code, out, _ = runCLI(t, "list", "--all", "--redis", srv.URL())
	for _, want := range []string{`"plain"`, done, attempt, vacancy, "the done record of job", "the vacancy of election"} {
		if code != 0 || !strings.Contains(out, want) {
			t.Errorf("list --all = %d, %q; want %q in it", code, out, want)
		}
	}
	if strings.Contains(out, "not shown") {
		t.Errorf("list --all = %q; says some are not shown", out)
	}

	for _, tt := range []struct {
		args []string
		want int
	}{{nil, 1}, {[]string{"--all"}, 4}} {
		code, out, _ = runCLI(t, append([]string{"list", "--json", "--redis", srv.URL()}, tt.args...)...)
		var locks []lockJSON
		if err := json.Unmarshal([]byte(out), &locks); err != nil || code != 0 || len(locks) != tt.want {
			t.Errorf("list --json %v = %d, %q (%v); want %d entries", tt.args, code, out, err, tt.want)
		}
		for _, l := range locks {
			if l.Record != (l.Key != "plain") || l.Record && l.What == "" {
				t.Errorf("list --json %v: %+v; want records marked, with what they are", tt.args, l)
			}
		}
	}
}

// TestTopHidesRecords: dlock top leaves the packages' records out, as
// list does, unless --all.
func TestTopHidesRecords(t *testing.T) {
	t.Parallel()
	srv, _ := heldLock(t, "plain")
	done, _, _, _ := packageRecords(t, srv)
	for _, tt := range []struct {
		all  []string
		want bool
	}{{nil, false}, {[]string{"--all"}, true}} {
		code, out, errOut := runCLI(t, append([]string{"top", "--count", "1", "--redis", srv.URL()}, tt.all...)...)
		if code != 0 || !strings.Contains(out, "\nplain\t") || strings.Contains(out, "\n"+done+"\t") != tt.want {
			t.Errorf("top %v = %d, %q, %q; want the lock, and the done record shown: %t", tt.all, code, out, errOut, tt.want)
		}
	}
}
