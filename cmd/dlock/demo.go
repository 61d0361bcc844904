package main

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/dlock-go/dlock/cmd/dlock/internal/demo"
	"github.com/redis/go-redis/v9"
)

const demoAbout = `demo runs the classic cases of distributed locking, with goroutines standing in
for service instances, and checks the invariant of each:

  double-click pay    five clicks on one pay button, sent over HTTP through the
                      idempotency middleware, charge the customer once
  cron on two hosts   a nightly job fired by two hosts, one a little late, runs once
                      (package jobs: the late host finds the slot done)
  flash sale          1200 buyers for 1000 items reserve, then pay (package stock);
                      carts abandoned come back when their hold expires: none oversold
  hot cache key       50 requests on 5 instances miss a key whose load takes 200ms;
                      one load runs (package cachefill), the others wait for its value
  expired holder      a holder paused past its ttl cannot release the next one's lock,
                      and an SQLite database refuses its late write (package fence)
  long job            a job that runs past its lock's ttl keeps the lock, renewed
  lost lock           a worker cut off from Redis is stopped before another takes over
  leader dies         of three candidates (package election), the leader dies without
                      resigning; another takes over when its lease runs out, in a
                      higher term, and two never lead at once
  redlock, 5 nodes    a lock on a Redlock quorum of five nodes survives two of them
                      dying, renewed on the three left; when a third dies, its holder
                      is told it is lost, and nobody else can take it

It takes about 15 seconds: the cases run one after the other, and the
table shows each one's row as it ends, with the package of dlock that the
case uses (dlock itself, idempotency, jobs, stock, cachefill, fence,
election).

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
		local, err := demo.StartEmbedded()
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
	if !demo.Run(ctx, rdb, stdout, stderr) {
		return exitFail
	}
	return exitOK
}
