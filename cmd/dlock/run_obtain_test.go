package main

import (
	"bytes"
	"errors"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/dlock-go/dlock"
	"github.com/dlock-go/dlock/redistest"
)

func TestWaitLine(t *testing.T) {
	tests := []struct {
		who    string
		holder time.Duration
		err    error
		left   time.Duration
		want   string
	}{
		{"", 12340 * time.Millisecond, nil, 4560 * time.Millisecond, `dlock: waiting for the lock on "k", held by another holder for 12.3s more; giving up in 4.6s`},
		{"h pid 7 (report via dlock run) [0a1b2c3d]", 12340 * time.Millisecond, nil, 4560 * time.Millisecond,
			`dlock: waiting for the lock on "k", held by h pid 7 (report via dlock run) [0a1b2c3d] for 12.3s more; giving up in 4.6s`},
		{"", -2, nil, time.Second, `dlock: waiting for the lock on "k", free now; giving up in 1.0s`},
		{"", -1, nil, time.Second, `dlock: waiting for the lock on "k", held by another holder with no expiry; giving up in 1.0s`},
		{"x", 0, errors.New("timeout"), -time.Second, `dlock: waiting for the lock on "k", held by another holder; giving up in 0.0s`},
	}
	for _, tt := range tests {
		if got := waitLine("k", tt.who, tt.holder, tt.err, tt.left); got != tt.want {
			t.Errorf("waitLine(%v, %v, %v) =\n%s\nwant\n%s", tt.holder, tt.err, tt.left, got, tt.want)
		}
	}
}

// TestShowWait checks the line redrawn on a terminal while dlock waits: it
// is drawn at once, redrawn in place every waitRedraw, and erased at the
// end. The redraws run on the fake clock of a synctest bubble (the Client is
// made in it; Redis answers over the network, during which the clock stands
// still), so two and a half periods are exactly two redraws.
func TestShowWait(t *testing.T) {
	t.Parallel()
	srv := redistest.NewServer(t)
	synctest.Test(t, func(t *testing.T) {
		rdb := srv.Client()
		rdb.Set(t.Context(), "k", "another holder", 10*time.Second) // by another client: no name
		var out bytes.Buffer
		w := &lockedWriter{w: &out}
		locker := dlock.New(rdb)
		defer locker.Close()
		stop := showWait(t.Context(), locker, "k", time.Now().Add(5*time.Second), w)
		time.Sleep(2*waitRedraw + waitRedraw/2)
		stop()
		checkShowWait(t, out.String())
	})
}

// checkShowWait checks what showWait drew: the first line, two redraws and
// the line that erases them.
func checkShowWait(t *testing.T, text string) {
	t.Helper()
	lines := strings.Split(strings.TrimSuffix(text, "\r"), "\r")[1:] // the text starts with \r
	if len(lines) != 4 || !strings.HasPrefix(text, "\r") {
		t.Fatalf("drew %q, want 4 lines (drawn, redrawn twice, erased), each after \\r", text)
	}
	for i, line := range lines[:len(lines)-1] {
		if !strings.HasPrefix(line, `dlock: waiting for the lock on "k", held by another holder [`+sha256Prefix("another holder")+`] for `) || !strings.Contains(line, "s more; giving up in ") {
			t.Errorf("drew %q", line)
		}
		// The deadline is 5s away; the redraws come waitRedraw apart.
		if left := []string{"5.0s", "4.8s", "4.5s"}[i]; !strings.HasSuffix(strings.TrimRight(line, " "), "giving up in "+left) {
			t.Errorf("line %d %q, want it to end giving up in %s", i, line, left)
		}
	}
	if last := lines[len(lines)-1]; strings.TrimSpace(last) != "" || len(last) < len(lines[0]) {
		t.Errorf("the last line %q does not erase the others", last)
	}
}
