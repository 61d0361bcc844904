package top

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/dlock-go/dlock"
)

// watchShown runs watchLocks with scan and keys in a goroutine, and returns
// a channel of the states it shows and one of what it returns. The
// interval is an hour unless cfg says: then the refresh at the start is
// the only one.
func watchShown(t *testing.T, cfg Config, scan func(context.Context) ([]dlock.LockInfo, error), keys <-chan byte) (<-chan topState, <-chan error) {
	t.Helper()
	cfg.Pattern = "*"
	if cfg.Interval == 0 {
		cfg.Interval = time.Hour
	}
	if cfg.Sort.column.name == "" {
		cfg.Sort, _ = ParseSort("key")
	}
	shown := make(chan topState, 10)
	done := make(chan error, 1)
	go func() {
		done <- watchLocks(t.Context(), cfg, scan, func(st topState, _ Config) error {
			shown <- st
			return nil
		}, keys)
	}()
	return shown, done
}

// TestWatchLocksKeys checks that a key re-sorts what is shown, at once,
// and that q quits.
func TestWatchLocksKeys(t *testing.T) {
	scan := func(context.Context) ([]dlock.LockInfo, error) {
		return []dlock.LockInfo{lockSeen("a", "h1"), {Key: "b", Held: true, Fingerprint: "h2", Waiters: 2}}, nil
	}
	keys := make(chan byte)
	shown, done := watchShown(t, Config{}, scan, keys)
	if st := <-shown; st.sort.String() != "key" || len(st.rows) != 2 || st.rows[0].key != "a" {
		t.Fatalf("first shown: sort %s, rows %+v", st.sort, st.rows)
	}
	keys <- 'x' // sorts nothing: nothing shown
	keys <- 'w'
	if st := <-shown; st.sort.String() != "waiters" || st.rows[0].key != "b" {
		t.Errorf("after w: sort %s, first row %s; want waiters, b", st.sort, st.rows[0].key)
	}
	keys <- 'q'
	if err := <-done; err != nil {
		t.Errorf("q: watchLocks = %v, want nil", err)
	}
}

// TestWatchLocksQuitWhileScanning checks that q quits while Redis does not
// answer: the scan under way is cancelled, and waited for.
func TestWatchLocksQuitWhileScanning(t *testing.T) {
	scanning := make(chan struct{})
	scan := func(ctx context.Context) ([]dlock.LockInfo, error) {
		close(scanning)
		<-ctx.Done()
		return nil, ctx.Err()
	}
	keys := make(chan byte)
	_, done := watchShown(t, Config{}, scan, keys)
	<-scanning
	keys <- 3 // Ctrl-C, as a terminal in raw mode sends it
	if err := <-done; err != nil {
		t.Errorf("Ctrl-C while scanning: watchLocks = %v, want nil", err)
	}
}

// TestWatchLocksCountFailed checks that --count ends with an error when
// the last refresh failed, and that a failed refresh keeps the rows of the
// last that worked.
func TestWatchLocksCountFailed(t *testing.T) {
	refreshes := 0 // one scan at a time
	scan := func(context.Context) ([]dlock.LockInfo, error) {
		if refreshes++; refreshes == 1 {
			return []dlock.LockInfo{lockSeen("a", "h1")}, nil
		}
		return nil, errors.New("redis down")
	}
	shown, done := watchShown(t, Config{Count: 2, Interval: time.Millisecond}, scan, nil)
	if err := <-done; err == nil || err.Error() != "dlock top: the last of 2 refreshes failed" {
		t.Errorf("--count 2, the 2nd refresh failed: watchLocks = %v", err)
	}
	if first, second := <-shown, <-shown; first.err != nil || second.err == nil || len(second.rows) != 1 || second.rows[0].key != "a" {
		t.Errorf("shown: %+v, then %+v; want a, then an error and a still", first, second)
	}
}
