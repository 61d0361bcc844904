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

// Where a verb finds its Redis server, or the nodes of its Redlock quorum,
// and the first contact with them. The verbs share this, so that a URL is
// parsed, redacted and checked one way.

// The environment variables of the verbs that take --redis.
const (
	envRedis         = "DLOCK_REDIS"          // the URLs when no --redis is given, comma-separated
	envRedisPassword = "DLOCK_REDIS_PASSWORD" // the password when the URL has none
)

// defaultRedisURL is the server used when neither --redis nor DLOCK_REDIS
// names one.
const defaultRedisURL = "redis://127.0.0.1:6379/0"

// A redisServer is a Redis server a verb talks to, as the user named it.
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

// redisFlagUsage is the help of the --redis flag of the verbs that take
// several.
const redisFlagUsage = "the Redis server at `URL`, redis://[user:password@]host:port[/db], or rediss://... for TLS;\n" +
	"given 3 or 5 times, the independent servers of a Redlock quorum\n(default $" + envRedis + ", else " + defaultRedisURL + ")"

// pickRedis returns the servers named by the --redis flags, else by
// DLOCK_REDIS, else the default, each with the password from
// DLOCK_REDIS_PASSWORD if its URL has none. Several servers are the nodes
// of a Redlock quorum, and must be distinct. Its errors are usage errors
// and never include a password. getenv is os.Getenv, or a stand-in in
// tests.
func pickRedis(flags []string, getenv func(string) string) ([]redisServer, error) {
	urls, from := flags, "--redis"
	if len(urls) == 0 {
		from = envRedis
		for u := range strings.SplitSeq(getenv(envRedis), ",") {
			if u = strings.TrimSpace(u); u != "" {
				urls = append(urls, u)
			}
		}
	}
	if len(urls) == 0 {
		urls, from = []string{defaultRedisURL}, ""
	}
	var srvs []redisServer
	seen := map[string]redisServer{} // by network address
	for _, raw := range urls {
		opts, shown, err := parseRedisURL(raw, cmp.Or(from, "--redis"))
		if err != nil {
			return nil, fmt.Errorf("dlock: %w", err)
		}
		srv := redisServer{opts: opts, shown: shown, from: from}
		if opts.Password == "" {
			if pw := getenv(envRedisPassword); pw != "" {
				opts.Password, srv.passwordFromEnv = pw, true
			}
		}
		addr := cmp.Or(opts.Network, "tcp") + " " + opts.Addr
		if other, dup := seen[addr]; dup {
			return nil, duplicateError(other, srv)
		}
		seen[addr] = srv
		srvs = append(srvs, srv)
	}
	return srvs, nil
}

// duplicateError is the usage error for two URLs of one server.
func duplicateError(first, second redisServer) error {
	const why = "the nodes of a Redlock quorum must be distinct, independent servers"
	if first.shown == second.shown {
		return fmt.Errorf("dlock: %s %s is given twice; %s", first.from, first.shown, why)
	}
	return fmt.Errorf("dlock: %s %s and %s are the same server; %s", first.from, first.shown, second.shown, why)
}

// parseRedisURL parses a Redis URL as redis.ParseURL does, and returns it
// also in a form fit to print: with the password replaced by "xxxxx" and
// without the query, where a mistaken user may have put a password too.
// Its errors name the URL's source (such as "--redis") and never include a
// byte of the password, whatever is wrong with the URL: a URL that does not
// parse, or whose password may not have been taken for one (an '@' after
// the host, from a password's unescaped '/', '?' or '#'), is not shown at
// all, nor are the parser's words, which quote parts of it.
func parseRedisURL(raw, source string) (opts *redis.Options, redacted string, err error) {
	const want = "want redis://[user:password@]host:port[/db], or rediss://... for TLS"
	const escape = "escape a password's special characters: %25 for %, %40 for @, %2F for /, %3F for ?, %23 for #"
	if !hasRedisScheme(raw) {
		return nil, "", fmt.Errorf("bad %s URL (not shown, as it may hold a password): it does not start with redis://, rediss:// or unix://; %s", source, want)
	}
	u, err := url.Parse(raw)
	if err != nil {
		return nil, "", fmt.Errorf("bad %s URL (not shown, as it may hold a password): %s; %s", source, urlDefect(err), escape)
	}
	if !passwordContained(raw, u) {
		return nil, "", fmt.Errorf("bad %s URL (not shown, as it may hold a password): it has an '@' after the host, "+
			"as a password with an unescaped '/', '?' or '#' makes; %s", source, escape)
	}
	shown := *u
	shown.RawQuery, shown.ForceQuery, shown.Fragment, shown.RawFragment = "", false, "", ""
	redacted = shown.Redacted()
	if opts, err = redis.ParseURL(raw); err != nil {
		msg := err.Error()
		if pw, ok := u.User.Password(); ok && pw != "" {
			msg = strings.ReplaceAll(msg, pw, "xxxxx") // go-redis's words quote parts of the URL, not the password; in case
		}
		return nil, "", fmt.Errorf("bad %s URL %s: %s; %s", source, redacted, msg, want)
	}
	return opts, redacted, nil
}

// hasRedisScheme reports whether raw starts with a scheme that
// redis.ParseURL takes. A value without one ("host:6379", "user:pw@host")
// is no URL to show: url.Parse would take what comes before its first ':'
// for a scheme, and the rest, password and all, as opaque.
func hasRedisScheme(raw string) bool {
	scheme, _, found := strings.Cut(raw, "://")
	if !found {
		return false
	}
	switch strings.ToLower(scheme) {
	case "redis", "rediss", "unix":
		return true
	}
	return false
}

// urlDefect says what url.Parse found wrong, in words that quote nothing
// of the URL: its error quotes the faulty part, which may be the password
// ("invalid URL escape "%zz"", "invalid port ":pw" after host").
func urlDefect(err error) string {
	var escapeErr url.EscapeError
	var hostErr url.InvalidHostError
	msg := err.Error()
	switch {
	case errors.As(err, &escapeErr):
		return "a '%' not followed by two hex digits"
	case errors.As(err, &hostErr):
		return "a character that a host name cannot hold"
	case strings.Contains(msg, "invalid port"):
		return "a port that is not a number (a password's unescaped '/', '?' or '#' ends the host early)"
	case strings.Contains(msg, "missing ']'"):
		return "a '[' without its ']' in the host"
	case strings.Contains(msg, "control character"):
		return "a control character"
	}
	return "it does not parse as a URL"
}

// passwordContained reports whether the userinfo of u, if any, is all that
// raw has before its last '@': otherwise a password cut short by an
// unescaped '/', '?' or '#' spills into the host, path, query or fragment,
// which messages show, and the server would be asked for the wrong one.
func passwordContained(raw string, u *url.URL) bool {
	if !strings.Contains(raw, "@") {
		return true
	}
	return u.User != nil && !strings.Contains(u.Host+u.Path+u.RawPath+u.RawQuery+u.Fragment+u.RawFragment, "@")
}

// connect returns a client of srv once the server has answered a PING within
// timeout. The caller closes the client.
func connect(ctx context.Context, srv redisServer, timeout time.Duration) (*redis.Client, error) {
	rdb, err := ping(ctx, srv, timeout)
	if err != nil {
		return nil, srv.pingError(err)
	}
	return rdb, nil
}

// ping is connect, with the error as it came.
func ping(ctx context.Context, srv redisServer, timeout time.Duration) (*redis.Client, error) {
	pingCtx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	if srv.opts.DialTimeout == 0 { // not set in the URL
		srv.opts.DialTimeout = timeout
	}
	if err := dial(pingCtx, srv.opts.Network, srv.opts.Addr); err != nil {
		return nil, err
	}
	rdb := redis.NewClient(srv.opts)
	if err := rdb.Ping(pingCtx).Err(); err != nil {
		rdb.Close()
		return nil, err
	}
	return rdb, nil
}

// pingError says what the first contact with Redis failing means, and what
// to do about it.
func (srv redisServer) pingError(err error) error {
	problem, advice := srv.pingProblem(err)
	if advice == "" {
		return errors.New("dlock: " + problem)
	}
	return errors.New("dlock: " + problem + "; " + advice)
}

// pingProblem is pingError in two parts: what went wrong, and what to do
// about it, if anything.
func (srv redisServer) pingProblem(err error) (problem, advice string) {
	msg := strings.TrimSuffix(err.Error(), ".")
	var reply redis.Error
	switch {
	case redis.IsAuthError(err) || redis.IsPermissionError(err):
		where := "in the URL"
		if srv.passwordFromEnv {
			where = "in the URL and " + envRedisPassword
		}
		return fmt.Sprintf("redis at %s refused: %s", srv.shown, msg), "check the user and password " + where
	case errors.As(err, &reply):
		return fmt.Sprintf("redis at %s answered PING with an error: %s", srv.shown, msg), ""
	}
	advice = "is redis-server running, and is " + srv.from + " right?"
	if srv.from == "" {
		advice = "is redis-server running? If it runs elsewhere, say where with --redis or " + envRedis
	}
	return fmt.Sprintf("cannot reach redis at %s: %s", srv.shown, msg), advice
}

// dial connects to a server and hangs up. connect calls it first, so that a
// server that cannot be reached gets one clear error at once: go-redis
// would dial several times, with pauses between, and log each failure (see
// quietLogs).
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

// severalURLs names the URLs of a quorum as the user gave them, for
// messages: "several --redis URLs" or "several URLs in DLOCK_REDIS".
func severalURLs(srvs []redisServer) string {
	if srvs[0].from == envRedis {
		return "several URLs in " + envRedis
	}
	return "several --redis URLs"
}

// closeAll closes the clients of rdbs.
func closeAll(rdbs []*redis.Client) {
	for _, rdb := range rdbs {
		rdb.Close()
	}
}
