package dlock_test

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/dlock-go/dlock/redistest"
)

// The ACL that docs/compat.md documents, rule by rule, for an application
// whose keys start with "app:", with every package at its default prefix.
var (
	// coreKeys and coreChannels: the application's lock keys, and dlock's
	// side keys and channels
	coreKeys     = []string{"~app:*", "~dlock:*"}
	coreChannels = []string{"&dlock:*"}
	// coreCommands: the scripts, the commands they run, and the release
	// messages
	coreCommands = []string{
		"+evalsha", "+eval",
		"+get", "+set", "+del", "+exists", "+type", "+pttl", "+pexpire", "+time", "+publish",
		"+zadd", "+zrem", "+zrange", "+zrangebyscore", "+zremrangebyscore", "+zscore", "+zcard", "+zcount",
		"+hget", "+hset", "+hdel",
		"+subscribe", "+unsubscribe", "+ping",
	}
	// packageKeys: the packages' prefixes (jobs' and election's keys are
	// dlock:* ones, and the application's own)
	packageKeys = []string{"~cachefill*", "~idem:*", "~stock*"}
	// packageCommands: what the packages' scripts and calls run besides
	// the core's: cachefill's and stock's, and Client.Scan's and jobs'
	// History's SCAN (and Client.Scan's GETRANGE)
	packageCommands = []string{"+hmget", "+hexists", "+hincrby", "+hlen", "+xadd", "+xrevrange", "+xread", "+scan", "+getrange"}
)

// minimalRules returns the rules of the documented ACL, in the order
// docs/compat.md shows them.
func minimalRules() []string {
	return slices.Concat(coreKeys, coreChannels, []string{"-@all"}, coreCommands, packageKeys, packageCommands)
}

// minimalACL returns the arguments of ACL SETUSER that give user the
// documented ACL, with password pass.
func minimalACL(user, pass string) []any {
	args := []any{"ACL", "SETUSER", user, "reset", "on", ">" + pass}
	for _, r := range minimalRules() {
		args = append(args, r)
	}
	return args
}

// docs/compat.md shows the ACL that the tests run under, rule for rule.
func TestCompatShowsTheMinimalACL(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join("docs", "compat.md"))
	if err != nil {
		t.Fatal(err)
	}
	line := "ACL SETUSER app on >secret " + strings.Join(minimalRules(), " ")
	if !strings.Contains(string(doc), "\n"+line+"\n") {
		t.Errorf("docs/compat.md does not show the ACL the tests use:\n%s", line)
	}
}

// minimalUser makes the user of the documented ACL on srv, and returns a
// function that makes clients logged in as that user, with opts.
func minimalUser(t *testing.T, srv *redistest.Server, opts ...func(*redis.Options)) func() *redis.Client {
	t.Helper()
	const user, pass = "app", "app-password"
	if err := srv.Client().Do(context.Background(), minimalACL(user, pass)...).Err(); err != nil {
		t.Fatal(err)
	}
	return func() *redis.Client {
		return srv.Client(append([]func(*redis.Options){func(o *redis.Options) { o.Username, o.Password = user, pass }}, opts...)...)
	}
}

// aclLogEmpty fails t, when it ends, if Redis refused anything but the
// CONFIG GET of CheckDeployment, which the documented ACL leaves out (the
// check then says nothing).
func aclLogEmpty(t *testing.T, srv *redistest.Server) {
	t.Helper()
	admin := srv.Client()
	t.Cleanup(func() {
		entries, err := admin.Do(context.Background(), "ACL", "LOG").Slice()
		if err != nil {
			t.Error(err)
		}
		for _, e := range entries {
			if fields, ok := e.(map[any]any); ok && fields["object"] == "config|get" {
				continue
			}
			t.Errorf("Redis refused the user: %v", e)
		}
	})
}

// TestMinimalACL runs every feature of dlock and of its packages as a user
// with exactly the ACL docs/compat.md documents: no call is refused.
func TestMinimalACL(t *testing.T) {
	srv := redistest.NewServer(t)
	aclLogEmpty(t, srv)
	exercise(t, minimalUser(t, srv))
}
