package main

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"text/tabwriter"
	"time"
	"unicode"

	"github.com/dlock-go/dlock/jobs"
)

// A jobsSubcommand is one subcommand of dlock jobs.
type jobsSubcommand struct {
	name, summary string
	run           func(ctx context.Context, args []string, stdout, stderr io.Writer) int
}

// jobsSubcommands lists the subcommands of dlock jobs, in the order its
// usage shows them.
func jobsSubcommands() []jobsSubcommand {
	return []jobsSubcommand{
		{"history", "show the recent attempts of a job: slot, status, host, start, duration, error", runJobsHistory},
	}
}

// runJobs is the jobs verb: the jobs of dlock run --once-per (package
// jobs), one subcommand per question.
func runJobs(ctx context.Context, args []string, _ io.Reader, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprintln(stderr, "dlock jobs: no subcommand given")
		jobsUsage(stderr)
		return exitUsage
	}
	switch args[0] {
	case "-h", "-help", "--help":
		jobsUsage(stdout)
		return exitOK
	}
	for _, sub := range jobsSubcommands() {
		if sub.name == args[0] {
			return sub.run(ctx, args[1:], stdout, stderr)
		}
	}
	fmt.Fprintf(stderr, "dlock jobs: unknown subcommand %q\n", args[0])
	jobsUsage(stderr)
	return exitUsage
}

func jobsUsage(w io.Writer) {
	fmt.Fprint(w, "Usage: dlock jobs <subcommand> [flags]\n\n")
	fmt.Fprint(w, "The jobs that dlock run --once-per runs once per slot (package jobs).\n\nSubcommands:\n")
	tw := tabwriter.NewWriter(w, 0, 0, 4, ' ', 0)
	for _, sub := range jobsSubcommands() {
		fmt.Fprintf(tw, "  %s\t%s\n", sub.name, sub.summary)
	}
	tw.Flush()
	fmt.Fprint(w, "\nRun 'dlock jobs <subcommand> --help' for its flags.\n")
}

// defaultHistoryLen is how many attempts dlock jobs history shows by
// default.
const defaultHistoryLen = 20

func runJobsHistory(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	var f inspectFlags
	fs := newFlagSet("jobs history", "[flags] KEY", `
Shows the recent attempts of the job KEY (the --key of dlock run
--once-per, or a job name given to package jobs), latest slot first: the
slot, the attempt's number in it, its status (succeeded; failed; running;
abandoned: its host stopped without a word), the host, when it started and
how long it took, and why it failed. Times are in UTC. The records are
kept for a day, or two periods of --once-per if that is longer. It walks
the keyspace with SCAN, on every primary of a Cluster; on a Redlock quorum
(several --redis) it needs every server to answer.

Exit status: 0 (also when no attempt is recorded), 64 for a usage error
or a KEY that no job can have, 69 when Redis could not be reached or
failed.`)
	f.register(fs)
	last := fs.Int("last", defaultHistoryLen, "show the latest `N` attempts; 0 shows all that are kept")
	name, code, done := parseKeyAndFlags(fs, args, stdout, stderr)
	if done {
		return code
	}
	if *last < 0 {
		fmt.Fprintf(stderr, "dlock jobs history: --last must not be negative, not %d\n", *last)
		return exitUsage
	}
	invalid := false
	code = f.do(ctx, stderr, false, func(ctx context.Context, t target) error {
		runner, err := jobs.New(t.locker)
		if err != nil {
			return err
		}
		records, err := runner.History(ctx, name)
		if err != nil {
			invalid = errors.Is(err, jobs.ErrInvalid)
			return err
		}
		older := 0
		if *last > 0 && len(records) > *last {
			older, records = len(records)-*last, records[:*last]
		}
		if err := printHistory(stdout, name, records, f.asJSON); err != nil {
			return err
		}
		if older > 0 {
			fmt.Fprintf(stderr, "dlock jobs history: %d older attempts not shown (--last 0 shows all)\n", older)
		}
		return nil
	})
	if invalid {
		return exitUsage
	}
	return code
}

// printHistory writes the attempts of the job named name, as a table or a
// JSON array of jobs.Record.
func printHistory(w io.Writer, name string, records []jobs.Record, asJSON bool) error {
	if asJSON {
		return json.NewEncoder(w).Encode(append([]jobs.Record{}, records...))
	}
	if len(records) == 0 {
		_, err := fmt.Fprintf(w, "no attempts of %s recorded\n", strconv.Quote(name))
		return err
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "SLOT\tATTEMPT\tSTATUS\tHOST\tSTARTED\tTOOK\tERROR")
	for _, r := range records {
		host := cmp.Or(r.Host, "-")
		fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%s\t%s\t%s\n", showTime(r.Slot), r.Attempt, r.Status, showText(host),
			showTime(r.Start), took(r), showText(r.Error))
	}
	return tw.Flush()
}

// showTime shows a time of a record, in UTC, to the second.
func showTime(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.UTC().Format(time.DateTime)
}

// took says how long an attempt took, or "-" if it did not end.
func took(r jobs.Record) string {
	if r.End.IsZero() {
		return "-"
	}
	d := r.End.Sub(r.Start)
	if d < 10*time.Second {
		return d.Round(time.Millisecond).String()
	}
	return d.Round(time.Second).String()
}

// showText shows a host or an error of a record: as it is, unless a rune
// of it does not print (a tab would break the columns, an escape sequence
// take the terminal over), then quoted.
func showText(s string) string {
	for _, c := range s {
		if !unicode.IsPrint(c) {
			return strconv.Quote(s)
		}
	}
	return s
}
