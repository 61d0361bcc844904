package dlock_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
	"unicode"

	"github.com/redis/go-redis/v9"

	"github.com/dlock-go/dlock"
	"github.com/dlock-go/dlock/redistest"
)

// docs/packages.md shows this test as the way to test code that uses dlock.
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

// sendInvoice is the README's first code: a lock obtained, the work done
// under it, the lock released.
func sendInvoice(ctx context.Context, rdb redis.UniversalClient, send func(ctx context.Context, fence int64) error) error {
	locker := dlock.New(rdb) // one per process: safe for concurrent use
	defer locker.Close()

	lock, err := locker.Obtain(ctx, "invoice:1001", 30*time.Second) // waits while another holder has it
	if err != nil {
		return err // errors.Is(err, dlock.ErrNotObtained) when ctx ended first
	}
	defer lock.Release(context.WithoutCancel(ctx))
	return send(ctx, lock.Fence())
}

// The README's five lines take the lock, hand the work a fence, and release
// it; while another holder has the lock they wait, and give up when ctx ends.
func TestReadmeObtainRelease(t *testing.T) {
	t.Parallel()
	srv := redistest.NewServer(t)
	var fences []int64
	send := func(_ context.Context, fence int64) error { fences = append(fences, fence); return nil }
	for range 2 {
		if err := sendInvoice(t.Context(), srv.Client(), send); err != nil {
			t.Fatal(err)
		}
	}
	if len(fences) != 2 || fences[1] <= fences[0] {
		t.Fatalf("fences = %v, want two, growing", fences)
	}

	other := newLocker(t, srv.Client())
	held, err := other.TryObtain(t.Context(), "invoice:1001", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	defer held.Release(context.WithoutCancel(t.Context()))
	ctx, cancel := context.WithTimeout(t.Context(), 50*time.Millisecond)
	defer cancel()
	err = sendInvoice(ctx, srv.Client(), send)
	if !errors.Is(err, dlock.ErrNotObtained) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("sendInvoice while another holds the lock = %v, want ErrNotObtained and the deadline", err)
	}
	if len(fences) != 2 {
		t.Fatalf("the work ran without the lock: fences = %v", fences)
	}
}

// dedent trims every line, so code compares whatever its indentation.
func dedent(s string) string {
	lines := strings.Split(s, "\n")
	for i, line := range lines {
		lines[i] = strings.TrimSpace(line)
	}
	return strings.Join(lines, "\n")
}

// docPages are the documents whose code the tests check: the README and
// the pages of docs/.
func docPages(t *testing.T) []string {
	t.Helper()
	pages, err := filepath.Glob(filepath.Join("docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	return append([]string{"README.md"}, pages...)
}

// testCode is every *_test.go file of this package and of the packages and
// modules under it (prometheus/, otel/, gocron/, faults/ have go.mods of
// their own, and test their code), dedented.
func testCode(t *testing.T) string {
	t.Helper()
	var files []string
	for _, pattern := range []string{"*_test.go", filepath.Join("*", "*_test.go")} {
		more, err := filepath.Glob(pattern)
		if err != nil {
			t.Fatal(err)
		}
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
	return dedent(tests.String())
}

// Every Go block in README.md and docs/*.md is a verbatim copy of code in
// the tests, so the documents' code compiles and runs with them.
func TestReadmeCodeIsTested(t *testing.T) {
	t.Parallel()
	tests := testCode(t)
	goBlock := regexp.MustCompile("(?s)```go\n(.*?)```")
	for _, page := range docPages(t) {
		text, err := os.ReadFile(page)
		if err != nil {
			t.Fatal(err)
		}
		blocks := goBlock.FindAllStringSubmatch(string(text), -1)
		if page == "README.md" && len(blocks) == 0 {
			t.Fatal("README.md has no Go code")
		}
		for _, block := range blocks {
			if !strings.Contains(tests, dedent(block[1])) {
				t.Errorf("this %s code is not in any *_test.go file:\n%s", page, block[1])
			}
		}
	}
}

// The example of each package in the README's table is code of the tests.
func TestReadmePackageExamplesAreTested(t *testing.T) {
	t.Parallel()
	tests := testCode(t)
	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	rows := regexp.MustCompile("(?m)^\\| \\[`[^`]+`\\]\\(https://pkg\\.go\\.dev/[^)]+\\)[^\n]*\\| `([^`]+)` \\|$").FindAllStringSubmatch(string(readme), -1)
	if len(rows) < 5 {
		t.Fatalf("README.md's table of packages has %d rows with an example, want every package", len(rows))
	}
	for _, row := range rows {
		if !strings.Contains(tests, row[1]) {
			t.Errorf("the README's example %q is not in any *_test.go file", row[1])
		}
	}
}

// Every relative link of README.md and docs/*.md names a file that exists,
// and a #fragment names a heading of its page.
func TestReadmeLinksResolve(t *testing.T) {
	t.Parallel()
	link := regexp.MustCompile(`\]\(([^)\s]+)\)`)
	for _, page := range docPages(t) {
		text, err := os.ReadFile(page)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range link.FindAllStringSubmatch(string(text), -1) {
			target := m[1]
			if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			file, fragment, _ := strings.Cut(target, "#")
			path := page
			if file != "" {
				path = filepath.Join(filepath.Dir(page), file)
				if _, err := os.Stat(path); err != nil {
					t.Errorf("%s links to %s, which does not exist", page, target)
					continue
				}
			}
			if fragment != "" && strings.HasSuffix(path, ".md") && !slices.Contains(headingSlugs(t, path), fragment) {
				t.Errorf("%s links to %s, which has no heading #%s", page, target, fragment)
			}
		}
	}
}

// headingSlugs returns the anchors GitHub gives the headings of a Markdown
// file: lower case, punctuation dropped, spaces made hyphens.
func headingSlugs(t *testing.T, path string) []string {
	t.Helper()
	text, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var slugs []string
	inCode := false
	for _, line := range strings.Split(string(text), "\n") {
		if strings.HasPrefix(line, "```") {
			inCode = !inCode
		}
		if inCode || !strings.HasPrefix(line, "#") {
			continue
		}
		heading := strings.ToLower(strings.TrimSpace(strings.TrimLeft(line, "#")))
		var slug strings.Builder
		for _, r := range heading {
			switch {
			case r == ' ':
				slug.WriteRune('-')
			case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r):
				slug.WriteRune(r)
			}
		}
		slugs = append(slugs, slug.String())
	}
	return slugs
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
