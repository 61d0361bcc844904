package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/dlock-go/dlock"
	"github.com/redis/go-redis/v9"
)

const demoAbout = `demo runs the cases this project started from, with goroutines standing in
for service instances, and checks the invariant of each:

  double-click pay    five clicks on one pay button, sent over HTTP through the
                      idempotency middleware, charge the customer once
  cron on two hosts   a nightly job fired by two hosts, one a little late, runs once
                      (package jobs: the late host finds the slot done)
  flash sale          1200 buyers for 1000 items reserve, then pay (package stock);
                      carts abandoned come back when their hold expires: none oversold
  hot cache key       50 requests on 5 instances miss a key whose load takes 200ms;
                      one load runs (package cachefill), the others wait for its value
  expired holder      a holder paused past its ttl cannot release the next one's lock
  long job            a job that runs past its lock's ttl keeps the lock, renewed
  lost lock           a worker cut off from Redis is stopped before another takes over
  leader dies         of three candidates (package election), the leader dies without
                      resigning; another takes over when its lease runs out, in a
                      higher term, and two never lead at once
  redlock, 5 nodes    a lock on a Redlock quorum of five nodes survives two of them
                      dying, renewed on the three left; when a third dies, its holder
                      is told it is lost, and nobody else can take it

It uses an embedded in-process Redis unless --redis names a server. The
redlock case always runs on five embedded nodes of its own, since it kills
three of them; with --redis, only the other cases use that server. Keys
start with "dlock-demo:" and a random run id (the cron case's records with
"dlock:job:dlock-demo:"); they are deleted at the end or expire within
seconds. The exit status is 1 if an invariant is broken.`

const embeddedName = "embedded Redis (miniredis)"

func runDemo(ctx context.Context, args []string, _ io.Reader, stdout, stderr io.Writer) int {
	fs := newFlagSet("demo", "[--redis URL] [--timeout DURATION]", demoAbout)
	redisURL := fs.String("redis", "", "use the Redis server at `URL`, redis://[user:password@]host:port[/db],\nor rediss://... for TLS (default: an embedded in-process Redis)")
	timeout := fs.Duration("timeout", 3*time.Second, "wait at most this long for Redis to answer at the start")
	if code, done := parseFlags(fs, args, 0, stdout, stderr); done {
		return code
	}
	if *timeout <= 0 {
		fmt.Fprintf(stderr, "dlock demo: --timeout must be positive, not %v\n", *timeout)
		return exitUsage
	}
	srv := redisServer{shown: embeddedName, from: "--redis"}
	if *redisURL == "" {
		local, err := startEmbedded()
		if err != nil {
			fmt.Fprintln(stderr, err)
			return exitFail
		}
		defer local.Close() // after rdb.Close
		srv.opts = &redis.Options{Addr: local.Addr()}
	} else {
		var err error
		if srv.opts, srv.shown, err = parseRedisURL(*redisURL, "--redis"); err != nil {
			fmt.Fprintf(stderr, "dlock demo: %v\n", err)
			return exitUsage
		}
	}
	rdb, err := connect(ctx, srv, *timeout)
	if err != nil {
		fmt.Fprintln(stderr, err)
		return exitUnavailable
	}
	defer rdb.Close()

	fmt.Fprintf(stdout, "dlock demo on %s\n", srv.shown)
	locker := dlock.New(rdb)
	defer locker.Close()
	d := &demo{rdb: rdb, locker: locker, prefix: fmt.Sprintf("dlock-demo:%08x:", rand.Uint32())}
	return d.runAll(ctx, demoCases(), stdout, stderr)
}

// runAll runs the cases, prints the table of what happened, and returns the
// exit status: exitFail if an invariant broke or a case could not run.
func (d *demo) runAll(ctx context.Context, cases []demoCase, stdout, stderr io.Writer) int {
	start := time.Now()
	var table bytes.Buffer
	tw := tabwriter.NewWriter(&table, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "CASE\tWHAT HAPPENED\tINVARIANT")
	var broken []string
	var errs []error
	for _, c := range cases {
		r := c.run(ctx, d)
		lines := strings.Split(r.happened, "\n")
		fmt.Fprintf(tw, "%s\t%s\t%s\n", c.name, lines[0], r.invariant)
		for _, line := range lines[1:] {
			fmt.Fprintf(tw, "\t%s\t\n", line)
		}
		name := strings.TrimSpace(c.name)
		if r.err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", name, r.err))
		}
		if !r.ok || r.err != nil {
			broken = append(broken, name)
		}
	}
	tw.Flush()
	for line := range strings.Lines(table.String()) {
		fmt.Fprintln(stdout, strings.TrimRight(line, " \n")) // the padding of an empty last cell
	}
	elapsed := time.Since(start).Round(time.Millisecond)
	if len(broken) == 0 {
		fmt.Fprintf(stdout, "all invariants hold (%v)\n", elapsed)
		return exitOK
	}
	for _, err := range errs {
		fmt.Fprintf(stderr, "dlock demo: %v\n", err)
	}
	fmt.Fprintf(stderr, "dlock demo: broken or failed: %s (%v)\n", strings.Join(broken, ", "), elapsed)
	return exitFail
}
