//go:build unix

package main

import (
	"context"
	"encoding/json"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/dlock-go/dlock"
	"github.com/dlock-go/dlock/jobs"
	"github.com/dlock-go/dlock/redistest"
)

// TestJobsHistory runs jobs with dlock run --once-per, and with package
// jobs, and shows their attempts with dlock jobs history: as a table, as
// JSON, the latest --last ones.
func TestJobsHistory(t *testing.T) {
	t.Parallel()
	srv := redistest.NewServer(t)
	hostname, _ := os.Hostname()
	checkCode(t, runDlock(t, nil, "run", "--once-per", onceEvery, "--key", "report", "--redis", srv.URL(), "--", "sh", "-c", "exit 3"), 3)

	code, out, errOut := runCLI(t, "jobs", "history", "--redis", srv.URL(), "report")
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	if code != exitOK || errOut != "" || len(lines) != 2 || !strings.HasPrefix(lines[0], "SLOT ") {
		t.Fatalf("jobs history = %d, %q, %q; want a header and one attempt", code, out, errOut)
	}
	row := regexp.MustCompile(`^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d +1 +failed +` + regexp.QuoteMeta(hostname) +
		` +\d{4}-\d\d-\d\d \d\d:\d\d:\d\d +\d[0-9.]*m?s +.*exited with status 3$`)
	if !row.MatchString(lines[1]) {
		t.Errorf("jobs history shows %q, want the failed attempt: slot, 1, failed, host, start, duration, error", lines[1])
	}

	code, out, _ = runCLI(t, "jobs", "history", "report", "--json", "--redis", srv.URL()) // flags after NAME
	var records []jobs.Record
	if err := json.Unmarshal([]byte(out), &records); err != nil || code != exitOK {
		t.Fatalf("jobs history --json = %d, %q: %v", code, out, err)
	}
	if len(records) != 1 || records[0].Job != "report" || records[0].Status != jobs.Failed || records[0].Host != hostname ||
		!strings.Contains(records[0].Error, "exited with status 3") || records[0].End.Before(records[0].Start) {
		t.Errorf("jobs history --json = %+v, want the failed attempt", records)
	}

	// Three hourly slots, run by package jobs on another host.
	locker := dlock.New(srv.Client())
	t.Cleanup(func() { locker.Close() })
	runner, err := jobs.New(locker, jobs.WithHost("host b"))
	if err != nil {
		t.Fatal(err)
	}
	start := time.Date(2026, 11, 21, 21, 0, 0, 0, time.UTC)
	for i := range 3 {
		if _, err := runner.Run(t.Context(), "hourly", start.Add(time.Duration(i)*time.Hour), func(context.Context) error { return nil }); err != nil {
			t.Fatal(err)
		}
	}
	code, out, errOut = runCLI(t, "jobs", "history", "--last", "2", "--redis", srv.URL(), "hourly")
	lines = strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	if code != exitOK || len(lines) != 3 || !strings.HasPrefix(lines[1], "2026-11-21 23:00:00  1 ") || !strings.HasPrefix(lines[2], "2026-11-21 22:00:00  1 ") ||
		!strings.Contains(lines[1], " succeeded  host b  ") {
		t.Errorf("jobs history --last 2 = %d, %q; want the two latest slots, latest first", code, out)
	}
	if !strings.Contains(errOut, "1 older attempts not shown") {
		t.Errorf("jobs history --last 2 said %q on stderr, want that one attempt is not shown", errOut)
	}

	code, out, errOut = runCLI(t, "jobs", "history", "--redis", srv.URL(), "never-ran")
	if code != exitOK || out != "no attempts of \"never-ran\" recorded\n" || errOut != "" {
		t.Errorf("jobs history of a job with no records = %d, %q, %q", code, out, errOut)
	}
}

// TestJobsHistoryUsage checks the usage errors of dlock jobs, its help, and
// a Redis that cannot be reached.
func TestJobsHistoryUsage(t *testing.T) {
	t.Parallel()
	srv := redistest.NewServer(t)
	for _, c := range []struct {
		args []string
		code int
		want string // in stderr, or in stdout when code is 0
	}{
		{[]string{"jobs"}, exitUsage, "dlock jobs: no subcommand given"},
		{[]string{"jobs", "nope"}, exitUsage, `dlock jobs: unknown subcommand "nope"`},
		{[]string{"jobs", "--help"}, exitOK, "history"},
		{[]string{"help", "jobs"}, exitOK, "history"},
		{[]string{"jobs", "history", "--help"}, exitOK, "Usage: dlock jobs history [flags] KEY"},
		{[]string{"jobs", "history", "--redis", srv.URL()}, exitUsage, "missing KEY"},
		{[]string{"jobs", "history", "--last", "-1", "--redis", srv.URL(), "job"}, exitUsage, "--last must not be negative"},
		{[]string{"jobs", "history", "--redis", srv.URL(), strings.Repeat("j", 201)}, exitUsage, "over 200"},
	} {
		code, out, errOut := runCLI(t, c.args...)
		got := errOut
		if c.code == exitOK {
			got = out
		}
		if code != c.code || !strings.Contains(got, c.want) {
			t.Errorf("dlock %s = %d, stdout %q, stderr %q; want %d and %q", strings.Join(c.args, " "), code, out, errOut, c.code, c.want)
		}
	}
	down := redistest.NewServer(t)
	down.Kill()
	code, _, errOut := runCLI(t, "jobs", "history", "--timeout", "2s", "--redis", down.URL(), "job")
	if code != exitUnavailable || errOut == "" {
		t.Errorf("jobs history with Redis down = %d, %q; want %d and why", code, errOut, exitUnavailable)
	}
	_, out, errOut := runCLI(t, "jobs", "history", "--timeout", "1s", "--redis", "redis://user:s3cret@127.0.0.1:1/0", "job")
	if strings.Contains(out+errOut, "s3cret") {
		t.Errorf("jobs history printed the password of its URL: %q", out+errOut)
	}
}
