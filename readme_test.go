package dlock_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dlock-go/dlock"
	"github.com/dlock-go/dlock/redistest"
)

// The README shows this test as the way to test code that uses dlock.
func TestNightlyReportGivesUpWhenRedisHangs(t *testing.T) {
	srv := redistest.NewServer(t)
	locker := dlock.New(srv.Client())
	t.Cleanup(func() { locker.Close() })

	srv.Pause() // Redis hangs: does the job give up in time?
	ctx, cancel := context.WithTimeout(t.Context(), 100*time.Millisecond)
	defer cancel()
	if err := nightlyReport(ctx, locker); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("nightlyReport on a hung Redis = %v, want a deadline error", err)
	}
	srv.Resume()
}

// dedent trims every line, so code compares whatever its indentation.
func dedent(s string) string {
	lines := strings.Split(s, "\n")
	for i, line := range lines {
		lines[i] = strings.TrimSpace(line)
	}
	return strings.Join(lines, "\n")
}

// Every Go block in README.md is a verbatim copy of code in this package's
// tests, or in those of the modules prometheus/ and otel/, so the README's
// code compiles and runs with them.
func TestReadmeCodeIsTested(t *testing.T) {
	t.Parallel()
	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	files, _ := filepath.Glob("*_test.go")
	for _, module := range []string{"prometheus", "otel"} { // modules of their own, which test their code
		more, _ := filepath.Glob(filepath.Join(module, "*_test.go"))
		files = append(files, more...)
	}
	var tests strings.Builder
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		tests.Write(b)
	}
	blocks := regexp.MustCompile("(?s)```go\n(.*?)```").FindAllStringSubmatch(string(readme), -1)
	if len(blocks) == 0 {
		t.Fatal("README.md has no Go code")
	}
	for _, block := range blocks {
		if !strings.Contains(dedent(tests.String()), dedent(block[1])) {
			t.Errorf("this README.md code is not in any *_test.go file:\n%s", block[1])
		}
	}
}

// The README's first example runs the job once across hosts: three hosts
// whose cron fires at once run it once, and so does a host whose clock is
// late, firing after the job is done.
func TestNightlyReportRunsOnceAcrossHosts(t *testing.T) {
	t.Parallel()
	srv := redistest.NewServer(t)
	var hosts []*dlock.Client
	for range 4 {
		hosts = append(hosts, newLocker(t, srv.Client()))
	}
	var runs atomic.Int32
	job := func(context.Context) error { runs.Add(1); return nil }
	report := func(ctx context.Context, locker *dlock.Client) error {
		// nightlyReport with the work counted
		err := locker.Do(ctx, "job:nightly-report", time.Minute, job,
			dlock.WithoutWait(),
			dlock.WithMinHold(10*time.Minute))
		if errors.Is(err, dlock.ErrNotObtained) {
			return nil
		}
		return err
	}
	var wg sync.WaitGroup
	for _, host := range hosts[:3] {
		wg.Go(func() {
			if err := report(t.Context(), host); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	if err := report(t.Context(), hosts[3]); err != nil { // its clock is late: the others are done
		t.Error(err)
	}
	if n := runs.Load(); n != 1 {
		t.Errorf("the job ran %d times on 4 hosts, want once", n)
	}
}
