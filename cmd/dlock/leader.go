package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"

	"github.com/dlock-go/dlock"
	"github.com/dlock-go/dlock/election"
)

const leaderAbout = `leader prints who leads the election KEY (the one that "dlock elect --key
KEY" and the Go package election campaign in): the value the leader
campaigned with, and its term, a number larger than the term of every
earlier leader, with the time it stands for: the server's time when the
leader took the seat. It exits 0 when the seat is taken, and 3 with "no
leader" when it is empty, as dlock status does for a free lock.

With --watch it prints the leader, then a line at each change ("no leader"
when the seat empties) as Redis pushes it, until it is interrupted (SIGINT
or SIGTERM, which end it with status 0). After a burst of changes the last
line is the current leader; some of the burst may be skipped. --timeout
bounds the connection only, and while Redis fails the watch tries again.

A line reads
  term 1795728702495975 (2026-11-26 22:51:42 UTC): "host-a"
and with --json
  {"leader":true,"value":"host-a","term":1795728702495975}
  {"leader":false}

Exit status:
  0   the seat is taken (or --watch was interrupted)
  3   the seat is empty: no leader
  64  usage error
  69  Redis could not be reached, or failed`

func runLeader(ctx context.Context, args []string, _ io.Reader, stdout, stderr io.Writer) int {
	var f inspectFlags
	fs := newFlagSet("leader", "--key KEY [--watch] [flags]", leaderAbout)
	f.register(fs)
	key := fs.String("key", "", "the election's `KEY` (required), as given to dlock elect")
	watch := fs.Bool("watch", false, "print every change of leader until interrupted")
	if code, done := parseFlags(fs, args, 0, stdout, stderr); done {
		return code
	}
	if *key == "" {
		fmt.Fprintln(stderr, "dlock leader: --key is required: name the election, as in: dlock leader --key scheduler")
		return exitUsage
	}
	if *watch {
		return f.connect(ctx, stderr, func(locker *dlock.Client) error {
			e, err := election.New(locker, *key)
			if err != nil {
				return err
			}
			return watchLeader(ctx, stdout, e, f.asJSON)
		})
	}
	found := true
	code := f.do(ctx, stderr, false, func(ctx context.Context, t target) error {
		e, err := election.New(t.locker, *key)
		if err != nil {
			return err
		}
		l, err := e.Leader(ctx)
		if errors.Is(err, election.ErrNoLeader) {
			found = false
			err = nil
		}
		if err != nil {
			return err
		}
		return printLeader(stdout, l, f.asJSON)
	})
	if code == exitOK && !found {
		return exitNone
	}
	return code
}

// watchLeader prints the leader of e, then each change, until ctx ends.
func watchLeader(ctx context.Context, w io.Writer, e *election.Election, asJSON bool) error {
	for l := range e.Observe(ctx) {
		if err := printLeader(w, l, asJSON); err != nil {
			return err
		}
	}
	return nil
}

// leaderJSON is the --json form of a leader, for scripts.
type leaderJSON struct {
	Leader bool   `json:"leader"`
	Value  string `json:"value,omitempty"`
	Term   int64  `json:"term,omitempty"`
}

// printLeader prints one line for l: a zero l is "no leader".
func printLeader(w io.Writer, l election.Leader, asJSON bool) error {
	if asJSON {
		return json.NewEncoder(w).Encode(leaderJSON{Leader: l.Term != 0, Value: l.Value, Term: l.Term})
	}
	var err error
	if l.Term == 0 {
		_, err = fmt.Fprintln(w, "no leader")
	} else {
		_, err = fmt.Fprintf(w, "term %s: %s\n", withTime(l.Term), strconv.Quote(l.Value))
	}
	return err
}

// connect is do for a verb that runs until ctx ends: --timeout bounds the
// connection only. It returns the exit status; errors are printed.
func (f *inspectFlags) connect(ctx context.Context, stderr io.Writer, fn func(*dlock.Client) error) int {
	return f.connectTarget(ctx, stderr, func(t target) error { return fn(t.locker) })
}

// connectTarget is connect for a verb that needs the nodes too, as
// scanLocks does.
func (f *inspectFlags) connectTarget(ctx context.Context, stderr io.Writer, fn func(target) error) int {
	srvs, err := pickRedis(f.urls, os.Getenv)
	if err != nil {
		fmt.Fprintln(stderr, err)
		return exitUsage
	}
	connectCtx, cancel := context.WithTimeout(ctx, f.timeout)
	rdbs, down, err := connectAll(connectCtx, srvs, f.timeout)
	cancel()
	if err != nil {
		if ctx.Err() != nil {
			return exitOK // interrupted: what ends a watch
		}
		fmt.Fprintln(stderr, err)
		return exitUnavailable
	}
	return f.use(rdbs, down, false, stderr, fn)
}
