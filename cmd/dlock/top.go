package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"sync"
	"time"

	"github.com/dlock-go/dlock"
)

const topAbout = `
Shows the locks held now whose keys match --match, refreshed every
--interval: for each, its key, its holder (the fingerprint of the holder's
token, as dlock status shows it), how long that holder has held it, its
remaining ttl, its fence, its waiters, its acquisitions per second, and the
value the lock carries, if any (dlock.WithValue).

On a terminal, the view is redrawn in place, and these keys sort it (the
same key again reverses the order):
  k  by key
  t  by ttl, the locks that expire soonest first
  w  by waiters, most first
  a  by acquisitions per second, most first
  h  by held for, longest first
  q  quit (Ctrl-C too), leaving the terminal as it was

When the output is not a terminal, each refresh prints a block of lines:
one that starts with "#" and gives the time, then a header and a line per
lock, with the columns separated by tabs, then an empty line; SIGINT,
SIGTERM or --count end it.

dlock top sees the locks at each refresh, not in between, so:
  - HELD FOR is how long the holder has held the lock, from its fence (the
    server's time at the acquire) when dlock took it; for a lock whose fence
    is not known, how long top has seen it: since the refresh that first
    found it, and ">" marks a holder that held it already when top started,
    for longer than shown.
  - ACQ/S counts a refresh that finds a new holder as one acquisition, over
    the last minute (or ten intervals, if longer): a lower bound, since
    holders that come and go between two refreshes are not seen, nor a
    lock taken and released in between.
  - a lock held for less than an interval may not show at all.

It finds the locks as dlock list does, with SCAN (see dlock list --help),
and leaves out the records of packages unless --all.
A refresh that fails is shown (on stderr when the output is not a
terminal) and tried again at the next interval. Exits 0 when quit,
interrupted, or done with --count; 69 when Redis cannot be reached at the
start, or with --count when the last refresh failed; 64 on a usage error.`

// topConfig is what dlock top's flags ask for.
type topConfig struct {
	pattern  string
	interval time.Duration
	limit    int // rows at most; 0: all that fit
	count    int // refreshes before exiting; 0: until quit
	sort     topSort
}

// rateWindow is the time over which dlock top counts acquisitions.
func (cfg topConfig) rateWindow() time.Duration {
	return max(time.Minute, 10*cfg.interval)
}

func runTop(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	var f inspectFlags
	fs := newFlagSet("top", "[flags]", topAbout)
	fs.Var(&f.urls, "redis", redisFlagUsage)
	fs.DurationVar(&f.timeout, "timeout", 5*time.Second, "give up connecting, or a refresh, if Redis has not answered within this long")
	var cfg topConfig
	fs.StringVar(&cfg.pattern, "match", "*", "show only the locks whose key matches this Redis glob `PATTERN`, as in 'job:*'")
	fs.DurationVar(&cfg.interval, "interval", time.Second, "refresh every `DURATION`")
	fs.IntVar(&cfg.limit, "limit", 0, "show `N` locks at most (default: all, or on a terminal all that fit)")
	fs.IntVar(&cfg.count, "count", 0, "exit after `N` refreshes (default: run until quit or interrupted)")
	sortBy := fs.String("sort", "key", "sort by `COLUMN` at first: key, ttl, waiters, acq/s or held")
	all := fs.Bool("all", false, "show the records of packages too (jobs' done records, elections' vacancies...), as dlock list --all")
	if code, done := parseFlags(fs, args, 0, stdout, stderr); done {
		return code
	}
	var ok bool
	if cfg.sort, ok = sortByName(*sortBy); !ok {
		fmt.Fprintf(stderr, "dlock top: --sort %q: want key, ttl, waiters, acq/s or held\n", *sortBy)
		return exitUsage
	}
	if cfg.interval <= 0 || cfg.limit < 0 || cfg.count < 0 {
		fmt.Fprintln(stderr, "dlock top: --interval must be positive, and --limit and --count not negative")
		return exitUsage
	}
	return f.connectTarget(ctx, stderr, func(t target) error {
		scan := func(ctx context.Context) ([]dlock.LockInfo, error) {
			ctx, cancel := context.WithTimeout(ctx, f.timeout)
			defer cancel()
			locks, err := scanLocks(ctx, t, cfg.pattern)
			if *all || err != nil {
				return locks, err
			}
			return slices.DeleteFunc(locks, func(info dlock.LockInfo) bool { return roleOf(info.Key).record }), nil
		}
		if out, ok := terminalOf(stdout); ok {
			return watchOnScreen(ctx, cfg, scan, stdin, out)
		}
		return watchLocks(ctx, cfg, scan, plainShow(stdout, stderr), nil)
	})
}

// watchOnScreen is watchLocks on the terminal out, which it gives back as
// it was, with the keys typed on stdin if it is a terminal too.
func watchOnScreen(ctx context.Context, cfg topConfig, scan func(context.Context) ([]dlock.LockInfo, error),
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
func plainShow(stdout, stderr io.Writer) func(topState, topConfig) error {
	return func(st topState, cfg topConfig) error {
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
// ctx ends, cfg.count refreshes are done, or a key quits. keys are the
// keys typed, or nil. A scan runs in a goroutine of its own, so that keys
// are handled while Redis is slow; at most one runs at a time, and
// watchLocks cancels it and waits for it before it returns. It returns an
// error when show fails, or when --count ends it after a refresh that
// failed.
func watchLocks(ctx context.Context, cfg topConfig, scan func(context.Context) ([]dlock.LockInfo, error),
	show func(topState, topConfig) error, keys <-chan byte) error {
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
	ticker := time.NewTicker(cfg.interval)
	defer ticker.Stop()
	refresh()
	scanning, refreshes := true, 0
	tr := newTracker(cfg.rateWindow())
	st := topState{sort: cfg.sort}
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
		if cfg.count > 0 && refreshes >= cfg.count {
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
