package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// Where a verb finds its Redis server, and the first contact with it. The
// verbs share this, so that a URL is parsed, redacted and checked one way.

// The environment variables of the verbs that take --redis.
const (
	envRedis         = "DLOCK_REDIS"          // the URLs when no --redis is given, comma-separated
	envRedisPassword = "DLOCK_REDIS_PASSWORD" // the password when the URL has none
)

// defaultRedisURL is the server used when neither --redis nor DLOCK_REDIS
// names one.
const defaultRedisURL = "redis://127.0.0.1:6379/0"

// A redisServer is the Redis server a verb talks to, as the user named it.
type redisServer struct {
	opts  *redis.Options
	shown string // its URL without password, query or fragment: fit to print
	// from is where the URL came from: "--redis", envRedis, or "" for
	// defaultRedisURL. The advice of an error names it.
	from            string
	passwordFromEnv bool // the password came from DLOCK_REDIS_PASSWORD
}

// redisURLs is the value of a repeatable --redis flag. Set never fails, so
// that the flag package never quotes a URL, password and all, in an error:
// pickRedis checks the URLs.
type redisURLs []string

func (u *redisURLs) String() string     { return "" } // no default to show, and never a password
func (u *redisURLs) Set(s string) error { *u = append(*u, s); return nil }

// pickRedis returns the server named by the --redis flags, else by
// DLOCK_REDIS, else the default, with the password from DLOCK_REDIS_PASSWORD
// if the URL has none. Its errors are usage errors and never include a
// password. getenv is os.Getenv, or a stand-in in tests.
func pickRedis(flags []string, getenv func(string) string) (redisServer, error) {
	urls, from := flags, "--redis"
	if len(urls) == 0 {
		from = envRedis
		for u := range strings.SplitSeq(getenv(envRedis), ",") {
			if u = strings.TrimSpace(u); u != "" {
				urls = append(urls, u)
			}
		}
	}
	switch {
	case len(urls) == 0:
		urls, from = []string{defaultRedisURL}, ""
	case len(urls) > 1 && from == envRedis:
		return redisServer{}, fmt.Errorf("dlock: several URLs in %s make a Redlock quorum, which this version of dlock does not support yet", envRedis)
	case len(urls) > 1:
		return redisServer{}, errors.New("dlock: several --redis URLs make a Redlock quorum, which this version of dlock does not support yet")
	}
	opts, shown, err := parseRedisURL(urls[0], cmp.Or(from, "--redis"))
	if err != nil {
		return redisServer{}, fmt.Errorf("dlock: %w", err)
	}
	srv := redisServer{opts: opts, shown: shown, from: from}
	if opts.Password == "" {
		if pw := getenv(envRedisPassword); pw != "" {
			opts.Password, srv.passwordFromEnv = pw, true
		}
	}
	return srv, nil
}

// parseRedisURL parses a Redis URL as redis.ParseURL does, and returns it
// also in a form fit to print: with the password replaced by "xxxxx" and
// without the query, where a mistaken user may have put a password too.
// Its errors name the URL's source (such as "--redis") and never include
// the URL as given.
func parseRedisURL(raw, source string) (opts *redis.Options, redacted string, err error) {
	const want = "want redis://[user:password@]host:port[/db], or rediss://... for TLS"
	u, err := url.Parse(raw)
	if err != nil {
		var urlErr *url.Error // its message quotes the whole URL
		if errors.As(err, &urlErr) {
			err = urlErr.Err
		}
		// %v, not %w: callers must not reach the url.Error, which quotes
		// the URL as given, password included.
		return nil, "", fmt.Errorf("bad %s URL: %v; %s", source, err, want) //nolint:errorlint // see above
	}
	shown := *u
	shown.RawQuery, shown.ForceQuery, shown.Fragment, shown.RawFragment = "", false, "", ""
	redacted = shown.Redacted()
	if opts, err = redis.ParseURL(raw); err != nil {
		return nil, "", fmt.Errorf("bad %s URL %s: %v; %s", source, redacted, err, want) //nolint:errorlint // as above
	}
	return opts, redacted, nil
}

// connect returns a client of srv once the server has answered a PING within
// timeout. The caller closes the client.
func connect(ctx context.Context, srv redisServer, timeout time.Duration) (*redis.Client, error) {
	pingCtx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	if err := dial(pingCtx, srv.opts.Network, srv.opts.Addr); err != nil {
		return nil, srv.pingError(err)
	}
	if srv.opts.DialTimeout == 0 { // not set in the URL
		srv.opts.DialTimeout = timeout
	}
	rdb := redis.NewClient(srv.opts)
	if err := rdb.Ping(pingCtx).Err(); err != nil {
		rdb.Close()
		return nil, srv.pingError(err)
	}
	return rdb, nil
}

// pingError says what the first contact with Redis failing means, and what
// to do about it.
func (srv redisServer) pingError(err error) error {
	msg := strings.TrimSuffix(err.Error(), ".")
	var reply redis.Error
	switch {
	case redis.IsAuthError(err) || redis.IsPermissionError(err):
		where := "in the URL"
		if srv.passwordFromEnv {
			where = "in the URL and " + envRedisPassword
		}
		return fmt.Errorf("dlock: redis at %s refused: %s; check the user and password %s", srv.shown, msg, where)
	case errors.As(err, &reply):
		return fmt.Errorf("dlock: redis at %s answered PING with an error: %s", srv.shown, msg)
	}
	advice := "is redis-server running, and is " + srv.from + " right?"
	if srv.from == "" {
		advice = "is redis-server running? If it runs elsewhere, say where with --redis or " + envRedis
	}
	return fmt.Errorf("dlock: cannot reach redis at %s: %s; %s", srv.shown, msg, advice)
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
