//go:build unix

package main

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/dlock-go/dlock/redistest"
)

// TestRunSeveralKeys runs dlocks under the locks of several keys, named in
// different orders, beside dlocks of one of the keys: the commands that
// share a key never run at the same time; a run of a key held elsewhere
// does not run its command; and while a run holds the keys, each shows
// held by it in status.
func TestRunSeveralKeys(t *testing.T) {
	t.Parallel()
	srv := redistest.NewServer(t)
	log := filepath.Join(t.TempDir(), "log")
	const script = `echo "start $2" >> "$1"; sleep 0.1; echo "end $2" >> "$1"`
	var procs []*dlockProcess
	for _, keys := range [][]string{{"a", "b"}, {"b", "a"}, {"a"}, {"b", "a", "b"}, {"b"}, {"a", "b"}} {
		args := []string{"run", "--wait", "20s", "--redis", srv.URL()}
		for _, key := range keys {
			args = append(args, "--key", key)
		}
		procs = append(procs, startDlock(t, nil, append(args, "--", "sh", "-c", script, "sh", log, strings.Join(keys, ""))...))
	}
	for _, p := range procs {
		checkCode(t, p.wait(t), 0)
	}
	data, err := os.ReadFile(log)
	if err != nil {
		t.Fatal(err)
	}
	// No two commands that share a key ran at the same time.
	running := map[string]int{} // key: commands under it running
	starts := 0
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		what, keys, _ := strings.Cut(line, " ")
		for _, key := range slices.Compact(slices.Sorted(slices.Values(strings.Split(keys, "")))) {
			if what == "start" {
				running[key]++
				if running[key] > 1 {
					t.Errorf("two commands under %s ran at once; their log:\n%s", key, data)
				}
			} else {
				running[key]--
			}
		}
		if what == "start" {
			starts++
		}
	}
	if starts != len(procs) {
		t.Errorf("%d commands ran, want %d; their log:\n%s", starts, len(procs), data)
	}

	dir := t.TempDir()
	started, done, marker := filepath.Join(dir, "started"), filepath.Join(dir, "done"), filepath.Join(dir, "marker")
	holder := startDlock(t, nil, "run", "--key", "y", "--key", "x", "--redis", srv.URL(), "--", "sh", "-c", gated, "sh", started, done)
	waitUntil(t, "the command under both keys to start", func() bool { return exists(started) })
	other := runDlock(t, nil, "run", "--key", "z", "--key", "x", "--redis", srv.URL(), "--", "touch", marker)
	checkCode(t, other, 75)
	if exists(marker) {
		t.Error("a command ran while another held one of its keys")
	}
	if n := srv.Client().Exists(t.Context(), "z").Val(); n != 0 {
		t.Error("the run that did not get x kept z")
	}
	var fingerprints []string // the fence and holder lines of each key
	for _, key := range []string{"x", "y"} {
		o := runDlock(t, nil, "status", "--redis", srv.URL(), key)
		checkCode(t, o, 0)
		if !strings.Contains(o.stdout, "held") {
			t.Errorf("status %s:\n%s\nwant held", key, o.stdout)
		}
		for _, line := range strings.Split(o.stdout, "\n") {
			if strings.HasPrefix(line, "holder:") || strings.HasPrefix(line, "fence:") {
				fingerprints = append(fingerprints, strings.TrimSpace(line))
			}
		}
	}
	if len(fingerprints) != 4 || fingerprints[0] != fingerprints[2] || fingerprints[1] != fingerprints[3] {
		t.Errorf("status shows the fences and holders %q, want one holder and one fence on both keys", fingerprints)
	}
	if err := os.WriteFile(done, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	checkCode(t, holder.wait(t), 0)
	if n := srv.Client().Exists(t.Context(), "x", "y").Val(); n != 0 {
		t.Error("the keys are still there after the run")
	}
}
