// Package top is dlock top's live view of the locks held: a table of
// them, refreshed every interval, redrawn in place on a terminal (where
// keys sort it) or printed as a block of lines per refresh elsewhere. It
// counts acquisitions per second from the changes of holder it sees
// between refreshes.
package top

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	"github.com/dlock-go/dlock"
)

// Config is what dlock top's flags ask for.
type Config struct {
	Pattern  string        // the Redis glob of the keys shown, for the header
	Interval time.Duration // between two refreshes; must be positive
	Limit    int           // rows at most; 0: all that fit
	Count    int           // refreshes before Watch returns; 0: until quit
	Sort     Sort          // the order of the rows at first (see ParseSort)
}

// rateWindow is the time over which dlock top counts acquisitions.
func (cfg Config) rateWindow() time.Duration {
	return max(time.Minute, 10*cfg.Interval)
}

// Watch shows the locks that scan finds, every cfg.Interval, until ctx
// ends, cfg.Count refreshes are done, or the user quits (q, or Ctrl-C). On
// a terminal, stdout is redrawn in place, and the keys typed on stdin, if
// it is a terminal too, sort the rows; the terminal is given back as it
// was. Elsewhere, each refresh prints a block of lines on stdout, and a
// refresh that failed its error on stderr. A refresh that fails is tried
// again at the next interval. Watch returns an error when it cannot write
// its output, or when cfg.Count ends it after a refresh that failed.
func Watch(ctx context.Context, cfg Config, scan func(context.Context) ([]dlock.LockInfo, error),
	stdin io.Reader, stdout, stderr io.Writer) error {
	if out, ok := terminalOf(stdout); ok {
		return watchOnScreen(ctx, cfg, scan, stdin, out)
	}
	return watchLocks(ctx, cfg, scan, plainShow(stdout, stderr), nil)
}

// watchOnScreen is watchLocks on the terminal out, which it gives back as
// it was, with the keys typed on stdin if it is a terminal too.
func watchOnScreen(ctx context.Context, cfg Config, scan func(context.Context) ([]dlock.LockInfo, error),
	stdin io.Reader, out *os.File) (err error) {
	s, err := openScreen(stdin, out)
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, s.close()) }()
	return watchLocks(ctx, cfg, scan, s.show, s.keyPresses())
}

// plainShow returns the show of watchLocks for an output that is no
// terminal: a block of lines for each refresh, and its error on stderr.
func plainShow(stdout, stderr io.Writer) func(topState, Config) error {
	return func(st topState, cfg Config) error {
		if st.err != nil {
			_, err := fmt.Fprintf(stderr, "dlock top: %s: %v\n", st.at.Format(time.RFC3339), st.err)
			return err
		}
		_, err := io.WriteString(stdout, plainBlock(st, cfg))
		return err
	}
}

// A topScan is the outcome of one refresh's scan.
type topScan struct {
	at    time.Time
	locks []dlock.LockInfo
	err   error
}

// watchLocks scans the locks every interval and has show show them, until
// ctx ends, cfg.Count refreshes are done, or a key quits. keys are the
// keys typed, or nil. A scan runs in a goroutine of its own, so that keys
// are handled while Redis is slow; at most one runs at a time, and
// watchLocks cancels it and waits for it before it returns. It returns an
// error when show fails, or when --count ends it after a refresh that
// failed.
func watchLocks(ctx context.Context, cfg Config, scan func(context.Context) ([]dlock.LockInfo, error),
	show func(topState, Config) error, keys <-chan byte) error {
	scanCtx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	defer wg.Wait()
	defer cancel() // before the wait: it ends the scan under way
	// A scan never waits to deliver its outcome: at most one runs.
	scanned := make(chan topScan, 1)
	refresh := func() {
		wg.Go(func() {
			locks, err := scan(scanCtx)
			scanned <- topScan{at: time.Now(), locks: locks, err: err}
		})
	}
	ticker := time.NewTicker(cfg.Interval)
	defer ticker.Stop()
	refresh()
	scanning, refreshes := true, 0
	tr := newTracker(cfg.rateWindow())
	st := topState{sort: cfg.Sort}
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-ticker.C:
			if !scanning { // else this tick is skipped: Redis is slower than the interval
				scanning = true
				refresh()
			}
			continue
		case r := <-scanned:
			if ctx.Err() != nil { // interrupted during the scan, which failed for it
				return nil
			}
			scanning = false
			refreshes++
			st.update(tr, r)
		case k := <-keys:
			if quitKey(k) {
				return nil
			}
			next, ok := st.sort.pressed(k)
			if !ok {
				continue
			}
			st.sort = next
			sortRows(st.rows, st.sort)
		}
		if err := show(st, cfg); err != nil {
			return err
		}
		if cfg.Count > 0 && refreshes >= cfg.Count {
			if st.err != nil { // shown already: say only why the exit status
				return fmt.Errorf("dlock top: the last of %d refreshes failed", refreshes)
			}
			return nil
		}
	}
}

// update takes in a refresh's scan: a failed one keeps the rows of the
// last that worked.
func (st *topState) update(tr *tracker, r topScan) {
	st.at, st.err = r.at, r.err
	if r.err != nil {
		return
	}
	st.rows = tr.observe(r.at, r.locks)
	sortRows(st.rows, st.sort)
}

// quitKey reports whether k quits dlock top: q, or Ctrl-C, which a terminal
// in raw mode sends as a key rather than as SIGINT.
func quitKey(k byte) bool {
	const ctrlC = 3
	return k == 'q' || k == 'Q' || k == ctrlC
}
