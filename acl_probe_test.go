package dlock_test

import (
	"context"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/dlock-go/dlock/internal/engine"
	"github.com/dlock-go/dlock/redistest"
)

// The tests of dlock and its packages under Redis ACL users (acl_*_test.go):
// that every script touches only the keys its call declares (so that it
// runs on a server that checks them, and under an ACL user allowed
// exactly its keys), that a user allowed the application's keys alone gets
// an error naming the rule it lacks, and that the ACL docs/compat.md
// documents is enough for every feature, over TLS too.

// A keysProbe runs every script call of its clients under an ACL user
// allowed exactly the keys the call declares in KEYS, and records what
// ran. Redis checks, inside a script, every key a command touches against
// the user's ACL: a script that builds a key name itself and touches it is
// refused, and the ACL LOG says which key, even where the script's pcall
// swallowed the refusal. So a script that touches an undeclared key fails
// the test however it handles the error, and whichever key it was.
//
// Calls run one at a time (the user is shared), each as its own command: a
// pipeline is taken apart. Commands other than scripts run with every key
// allowed: what they touch they name as arguments, which Redis checks and
// no hidden key can slip past. Channels are all allowed: they are no keys.
type keysProbe struct {
	srv   *redistest.Server
	admin *redis.Client
	mu    sync.Mutex // one call at a time: the ACL is the user's
	ran   map[string]int
}

const probeUser, probePass = "probe", "probe-password"

// newKeysProbe makes the probe user on srv, and checks when the test ends
// that Redis refused it nothing.
func newKeysProbe(t *testing.T, srv *redistest.Server) *keysProbe {
	t.Helper()
	p := &keysProbe{srv: srv, admin: srv.Client(), ran: map[string]int{}}
	ctx := context.Background()
	if err := p.admin.Do(ctx, "ACL", "SETUSER", probeUser, "reset", "on", ">"+probePass, "allkeys", "allchannels", "+@all").Err(); err != nil {
		t.Fatal(err)
	}
	if err := p.admin.Do(ctx, "ACL", "LOG", "RESET").Err(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		entries, err := p.admin.Do(ctx, "ACL", "LOG").Slice()
		if err != nil {
			t.Error(err)
			return
		}
		for _, e := range entries {
			t.Errorf("Redis refused the probe user: %v", e)
		}
	})
	return p
}

// client returns a client of the probe's server, as the probe user,
// through the probe.
func (p *keysProbe) client() *redis.Client {
	rdb := p.srv.Client(func(o *redis.Options) { o.Username, o.Password = probeUser, probePass })
	rdb.AddHook(p)
	return rdb
}

// DialHook does nothing.
func (p *keysProbe) DialHook(next redis.DialHook) redis.DialHook { return next }

// ProcessHook runs cmd under the ACL that allows its declared keys.
func (p *keysProbe) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if keyless(cmd) {
			return next(ctx, cmd)
		}
		p.mu.Lock()
		defer p.mu.Unlock()
		if err := p.allow(ctx, cmd); err != nil {
			cmd.SetErr(err)
			return err
		}
		return next(ctx, cmd)
	}
}

// ProcessPipelineHook runs each command of a pipeline on its own, as
// ProcessHook does; a transaction runs whole, with the keys of all its
// commands.
func (p *keysProbe) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		if !slices.ContainsFunc(cmds, func(c redis.Cmder) bool { return !keyless(c) }) {
			return next(ctx, cmds) // a connection's set-up, run inside another command
		}
		p.mu.Lock()
		defer p.mu.Unlock()
		if slices.ContainsFunc(cmds, func(c redis.Cmder) bool { return c.Name() == "multi" }) {
			if err := p.allow(ctx, cmds...); err != nil {
				return err
			}
			return next(ctx, cmds)
		}
		var first error
		for _, cmd := range cmds {
			err := p.allow(ctx, cmd)
			if err == nil {
				err = next(ctx, []redis.Cmder{cmd})
			} else {
				cmd.SetErr(err)
			}
			if err != nil && first == nil {
				first = err
			}
		}
		return first
	}
}

// keyless reports whether cmd is one that names no key: those of a
// connection's set-up, which go-redis runs inside the command that needed
// the connection, and so must not wait for the probe.
func keyless(cmd redis.Cmder) bool {
	switch cmd.Name() {
	case "hello", "auth", "client", "select", "ping", "readonly", "command", "time":
		return true
	}
	return false
}

// allow sets the probe user's key patterns to exactly the keys that the
// scripts among cmds declare, or to all keys if none is a script.
func (p *keysProbe) allow(ctx context.Context, cmds ...redis.Cmder) error {
	args := []any{"ACL", "SETUSER", probeUser, "resetkeys"}
	scripts := 0
	for _, cmd := range cmds {
		keys, sha, ok := scriptKeys(cmd)
		if !ok {
			continue
		}
		scripts++
		p.ran[sha]++
		for _, k := range keys {
			args = append(args, "~"+globEscape(k))
		}
	}
	if scripts < len(cmds) {
		args = append(args, "allkeys")
	}
	return p.admin.Do(ctx, args...).Err()
}

// scriptKeys returns the KEYS of cmd and its script's digest, if cmd runs
// a script.
func scriptKeys(cmd redis.Cmder) (keys []string, sha string, ok bool) {
	args := cmd.Args()
	switch cmd.Name() {
	case "evalsha", "evalsha_ro":
		sha = argString(args[1])
	case "eval", "eval_ro":
		sha = redis.NewScript(argString(args[1])).Hash()
	default:
		return nil, "", false
	}
	n, err := strconv.Atoi(argString(args[2]))
	if err != nil {
		panic(fmt.Sprintf("keysProbe: %v: numkeys %v", cmd.Args(), args[2]))
	}
	for _, a := range args[3 : 3+n] {
		keys = append(keys, argString(a))
	}
	return keys, sha, true
}

// argString returns a command argument as go-redis writes it.
func argString(a any) string {
	switch a := a.(type) {
	case string:
		return a
	case *string:
		return *a
	case []byte:
		return string(a)
	}
	return fmt.Sprint(a)
}

// globEscape escapes what an ACL key pattern would read as a wildcard.
// ACL SETUSER refuses a pattern with a space or a control character in
// it: each of those becomes '?', which matches one character, any.
func globEscape(key string) string {
	var b strings.Builder
	for _, c := range []byte(key) {
		switch {
		case c <= ' ' || c == 0x7f:
			c = '?'
		case strings.IndexByte(`*?[]\`, c) >= 0:
			b.WriteByte('\\')
		}
		b.WriteByte(c)
	}
	return b.String()
}

// scriptsRan returns how many distinct scripts ran through the probe.
func (p *keysProbe) scriptsRan() map[string]int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return maps.Clone(p.ran)
}

// TestScriptsTouchOnlyDeclaredKeys runs every feature of dlock and of its
// packages with each script call under an ACL user allowed exactly the
// keys the call declares (see keysProbe): a script that touches any other
// key is refused, and the test fails. Each of the engine's scripts must
// have run.
func TestScriptsTouchOnlyDeclaredKeys(t *testing.T) {
	p := newKeysProbe(t, redistest.NewServer(t))
	exercise(t, p.client)
	ran := p.scriptsRan()
	for name, sha := range engine.Scripts() {
		if name == "multi_store_fence" {
			// It runs on a Cluster only (ObtainMulti of keys in several
			// slots); internal/engine's TestMultiStoreFence runs it under an
			// ACL user allowed its keys alone.
			continue
		}
		if ran[sha] == 0 {
			t.Errorf("the engine's %s.lua never ran: exercise it", name)
		}
	}
	t.Logf("%d scripts ran, %d of them the engine's", len(ran), len(engine.Scripts()))
}

// No script carries Redis 7's flags (a "#!lua flags=..." first line), which
// servers without them refuse, and none asks for allow-cross-slot-keys.
func TestScriptsHaveNoFlags(t *testing.T) {
	var files []string
	for _, pattern := range []string{"internal/engine/lua/*.lua", "cachefill/lua/*.lua", "stock/lua/*.lua", "fence/*.lua"} {
		found, err := filepath.Glob(filepath.FromSlash(pattern))
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, found...)
	}
	if len(files) < 20 {
		t.Fatalf("found only %d scripts: %q", len(files), files)
	}
	for _, f := range files {
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if strings.HasPrefix(string(src), "#!") || strings.Contains(string(src), "allow-cross-slot-keys") {
			t.Errorf("%s has script flags", f)
		}
	}
}
