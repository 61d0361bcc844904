package main

import (
	"bytes"
	"errors"
	"strings"
	"testing"
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
// is drawn at once, redrawn in place, and erased at the end.
func TestShowWait(t *testing.T) {
	t.Parallel()
	srv := redistest.NewServer(t)
	rdb := srv.Client()
	rdb.Set(t.Context(), "k", "another holder", 10*time.Second) // by another client: no name
	var out bytes.Buffer
	w := &lockedWriter{w: &out}
	locker := dlock.New(rdb)
	t.Cleanup(func() { locker.Close() })
	stop := showWait(t.Context(), locker, "k", time.Now().Add(5*time.Second), w)
	time.Sleep(2*waitRedraw + waitRedraw/2)
	stop()

	text := out.String()
	lines := strings.Split(strings.TrimSuffix(text, "\r"), "\r")[1:] // the text starts with \r
	if len(lines) < 3 || !strings.HasPrefix(text, "\r") {
		t.Fatalf("drew %q, want 3 lines or more, each after \\r", text)
	}
	for _, line := range lines[:len(lines)-1] {
		if !strings.HasPrefix(line, `dlock: waiting for the lock on "k", held by another holder [`+sha256Prefix("another holder")+`] for `) || !strings.Contains(line, "s more; giving up in ") {
			t.Errorf("drew %q", line)
		}
	}
	if last := lines[len(lines)-1]; strings.TrimSpace(last) != "" || len(last) < len(lines[0]) {
		t.Errorf("the last line %q does not erase the others", last)
	}
}
