package main

import (
	"context"
	"fmt"
	"io"
	"slices"
	"time"

	"github.com/dlock-go/dlock"
	"github.com/dlock-go/dlock/cmd/dlock/internal/top"
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

func runTop(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	var f inspectFlags
	fs := newFlagSet("top", "[flags]", topAbout)
	fs.Var(&f.urls, "redis", redisFlagUsage)
	fs.DurationVar(&f.timeout, "timeout", 5*time.Second, "give up connecting, or a refresh, if Redis has not answered within this long")
	var cfg top.Config
	fs.StringVar(&cfg.Pattern, "match", "*", "show only the locks whose key matches this Redis glob `PATTERN`, as in 'job:*'")
	fs.DurationVar(&cfg.Interval, "interval", time.Second, "refresh every `DURATION`")
	fs.IntVar(&cfg.Limit, "limit", 0, "show `N` locks at most (default: all, or on a terminal all that fit)")
	fs.IntVar(&cfg.Count, "count", 0, "exit after `N` refreshes (default: run until quit or interrupted)")
	sortBy := fs.String("sort", "key", "sort by `COLUMN` at first: key, ttl, waiters, acq/s or held")
	all := fs.Bool("all", false, "show the records of packages too (jobs' done records, elections' vacancies...), as dlock list --all")
	if code, done := parseFlags(fs, args, 0, stdout, stderr); done {
		return code
	}
	var ok bool
	if cfg.Sort, ok = top.ParseSort(*sortBy); !ok {
		fmt.Fprintf(stderr, "dlock top: --sort %q: want key, ttl, waiters, acq/s or held\n", *sortBy)
		return exitUsage
	}
	if cfg.Interval <= 0 || cfg.Limit < 0 || cfg.Count < 0 {
		fmt.Fprintln(stderr, "dlock top: --interval must be positive, and --limit and --count not negative")
		return exitUsage
	}
	return f.connectTarget(ctx, stderr, func(t target) error {
		scan := func(ctx context.Context) ([]dlock.LockInfo, error) {
			ctx, cancel := context.WithTimeout(ctx, f.timeout)
			defer cancel()
			locks, err := scanLocks(ctx, t, cfg.Pattern)
			if *all || err != nil {
				return locks, err
			}
			return slices.DeleteFunc(locks, func(info dlock.LockInfo) bool { return roleOf(info.Key).record }), nil
		}
		return top.Watch(ctx, cfg, scan, stdin, stdout, stderr)
	})
}
