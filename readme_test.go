package dlock_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"strings"
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
// tests, so the README's code compiles and runs with them.
func TestReadmeCodeIsTested(t *testing.T) {
	t.Parallel()
	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	files, _ := filepath.Glob("*_test.go")
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
