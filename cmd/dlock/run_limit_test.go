//go:build unix

package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/dlock-go/dlock/redistest"
)

// TestRunLimit runs dlock run --limit 2 three times on one key: two
// commands run at once, the third finds the permits taken and exits 75;
// with --wait it runs once a permit is free. dlock status and list show
// the semaphore and its holders.
func TestRunLimit(t *testing.T) {
	t.Parallel()
	srv := redistest.NewServer(t)
	dir := t.TempDir()
	var holders []*dlockProcess
	var dones []string
	for i := range 2 {
		started, done := filepath.Join(dir, "started"+string(rune('a'+i))), filepath.Join(dir, "done"+string(rune('a'+i)))
		holders = append(holders, startDlock(t, nil, "run", "--limit", "2", "--key", "exports", "--redis", srv.URL(), "--", "sh", "-c", gated, "sh", started, done))
		dones = append(dones, done)
		waitUntil(t, "a holder's command to start", func() bool { return exists(started) })
	}

	code, out, errOut := runCLI(t, "run", "-v", "--limit", "2", "--key", "exports", "--redis", srv.URL(), "--", "true")
	if code != exitNotObtained || !strings.Contains(errOut, "at its limit of 2 holders") {
		t.Errorf("a third run = %d, %q, %q; want %d, at its limit", code, out, errOut, exitNotObtained)
	}
	code, out, _ = runCLI(t, "status", "--redis", srv.URL(), "exports")
	if code != exitOK || !regexp.MustCompile(`(?m)^kind: +semaphore$`).MatchString(out) || !strings.Contains(out, "2 of 2 permits") ||
		strings.Count(out, "  permit:") != 2 {
		t.Errorf("status of the semaphore = %d, %q", code, out)
	}
	code, out, _ = runCLI(t, "status", "--json", "--redis", srv.URL(), "exports")
	var info lockJSON
	if code != exitOK || json.Unmarshal([]byte(out), &info) != nil || info.Kind != "semaphore" || info.Limit != 2 || len(info.Holders) != 2 {
		t.Errorf("status --json = %d, %q", code, out)
	}
	code, out, _ = runCLI(t, "list", "--redis", srv.URL())
	if code != exitOK || !regexp.MustCompile(`"exports" +semaphore .*2 of 2 permits`).MatchString(out) {
		t.Errorf("list = %d, %q", code, out)
	}
	code, _, errOut = runCLI(t, "run", "--limit", "3", "--key", "exports", "--redis", srv.URL(), "--", "true")
	if code != exitUsage || !strings.Contains(errOut, "same --limit") {
		t.Errorf("another --limit = %d, %q; want %d", code, errOut, exitUsage)
	}

	log := filepath.Join(dir, "log")
	waiter := startDlock(t, nil, "run", "--limit", "2", "--wait", "20s", "--key", "exports", "--redis", srv.URL(), "--", "sh", "-c", `echo ran > "$1"`, "sh", log)
	if err := os.WriteFile(dones[0], nil, 0o600); err != nil {
		t.Fatal(err)
	}
	checkCode(t, holders[0].wait(t), 0)
	checkCode(t, waiter.wait(t), 0)
	if !exists(log) {
		t.Error("the waiting run did not run its command")
	}
	if err := os.WriteFile(dones[1], nil, 0o600); err != nil {
		t.Fatal(err)
	}
	checkCode(t, holders[1].wait(t), 0)
}

func TestRunLimitBadInput(t *testing.T) {
	t.Parallel()
	srv := redistest.NewServer(t)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--limit", "-1", "--redis", srv.URL()}, "--limit must be at least 1"},
		{[]string{"--limit", "2", "--redis", srv.URL(), "--redis", "redis://127.0.0.1:2", "--redis", "redis://127.0.0.1:3"}, "needs a single Redis deployment"},
		{[]string{"--limit", "2", "--once-per", "1h", "--redis", srv.URL()}, "--once-per does not go with --limit"},
	} {
		args := append(append([]string{"run", "--key", "k"}, tc.args...), "--", "true")
		if code, _, errOut := runCLI(t, args...); code != exitUsage || !strings.Contains(errOut, tc.want) {
			t.Errorf("%v = %d, %q; want %d, %q", tc.args, code, errOut, exitUsage, tc.want)
		}
	}
}
