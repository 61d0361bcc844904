package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/url"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/dlock-go/dlock"
	"github.com/redis/go-redis/v9"
)

const demoAbout = `demo runs the cases this project started from, with goroutines standing in
for service instances, and checks the invariant of each:

  double-click pay    five clicks on one pay button charge the customer once
  cron on two hosts   a nightly job fired by two hosts, one a little late, runs once
  flash sale          1200 buyers for 1000 items: none oversold
  expired holder      a holder paused past its ttl cannot release the next one's lock

It uses an embedded in-process Redis unless --redis names a server. Its keys
start with "dlock-demo:" and a random run id; they are deleted at the end or
expire within seconds. The exit status is 1 if an invariant is broken.`

const embeddedName = "embedded Redis (miniredis)"

func runDemo(ctx context.Context, args []string, stdout, stderr io.Writer) int {
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
	var opts *redis.Options // nil: embedded
	where := embeddedName
	if *redisURL != "" {
		var err error
		if opts, where, err = parseRedisURL(*redisURL); err != nil {
			fmt.Fprintf(stderr, "dlock demo: %v\n", err)
			return exitUsage
		}
	}
	rdb, closeRedis, err := connect(ctx, opts, where, *timeout)
	if err != nil {
		fmt.Fprintln(stderr, err)
		return exitFail
	}
	defer closeRedis()

	fmt.Fprintf(stdout, "dlock demo on %s\n", where)
	locker := dlock.New(rdb)
	defer locker.Close()
	d := &demo{rdb: rdb, locker: locker, prefix: fmt.Sprintf("dlock-demo:%08x:", rand.Uint32())}
	return d.runAll(ctx, demoCases(), stdout, stderr)
}

// parseRedisURL parses a --redis URL as redis.ParseURL does, and returns it
// also in a form fit to print: with the password replaced by "xxxxx" and
// without the query, where a mistaken user may have put a password too.
// Its errors never include the URL as given.
func parseRedisURL(raw string) (opts *redis.Options, redacted string, err error) {
	const want = "want redis://[user:password@]host:port[/db], or rediss://... for TLS"
	u, err := url.Parse(raw)
	if err != nil {
		var urlErr *url.Error // its message quotes the whole URL
		if errors.As(err, &urlErr) {
			err = urlErr.Err
		}
		// %v, not %w: callers must not reach the url.Error, which quotes
		// the URL as given, password included.
		return nil, "", fmt.Errorf("bad --redis URL: %v; %s", err, want) //nolint:errorlint // see above
	}
	shown := *u
	shown.RawQuery, shown.ForceQuery, shown.Fragment, shown.RawFragment = "", false, "", ""
	redacted = shown.Redacted()
	if opts, err = redis.ParseURL(raw); err != nil {
		return nil, "", fmt.Errorf("bad --redis URL %s: %v; %s", redacted, err, want) //nolint:errorlint // as above
	}
	return opts, redacted, nil
}

// connect returns a client of the Redis server described by opts, or of a
// new embedded server when opts is nil, once it has answered a PING within
// timeout. closeRedis closes the client and stops the embedded server.
func connect(ctx context.Context, opts *redis.Options, where string, timeout time.Duration) (rdb *redis.Client, closeRedis func(), err error) {
	var local *embedded
	if opts == nil {
		if local, err = startEmbedded(); err != nil {
			return nil, nil, err
		}
		opts = &redis.Options{Addr: local.Addr()}
	}
	pingCtx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	if local == nil {
		if err := dial(pingCtx, opts.Network, opts.Addr); err != nil {
			return nil, nil, pingError(where, err)
		}
	}
	if opts.DialTimeout == 0 { // not set in the URL
		opts.DialTimeout = timeout
	}
	rdb = redis.NewClient(opts)
	closeRedis = func() {
		rdb.Close()
		if local != nil {
			local.Close()
		}
	}
	if err := rdb.Ping(pingCtx).Err(); err != nil {
		closeRedis()
		return nil, nil, pingError(where, err)
	}
	return rdb, closeRedis, nil
}

// pingError says what the first contact with Redis failing means, and what
// to do about it.
func pingError(where string, err error) error {
	msg := strings.TrimSuffix(err.Error(), ".")
	var reply redis.Error
	switch {
	case redis.IsAuthError(err) || redis.IsPermissionError(err):
		return fmt.Errorf("dlock: redis at %s refused: %s; check the user and password in the URL", where, msg)
	case errors.As(err, &reply):
		return fmt.Errorf("dlock: redis at %s answered PING with an error: %s", where, msg)
	}
	return fmt.Errorf("dlock: cannot reach redis at %s: %s; is redis-server running?", where, msg)
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

// dial connects to a server and hangs up. connect calls it first, so that a
// server that cannot be reached gets one clear error: go-redis would also
// log each failed dial of its connection pool on stderr, several times.
func dial(ctx context.Context, network, addr string) error {
	if network == "" {
		network = "tcp"
	}
	var d net.Dialer
	conn, err := d.DialContext(ctx, network, addr)
	if err != nil {
		return err
	}
	return conn.Close()
}
