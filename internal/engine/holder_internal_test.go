package engine

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/dlock-go/dlock/internal/testenv"
	"github.com/dlock-go/dlock/redistest"
)

// lockValues are values a lock key may hold: dlock's forms, and others.
var lockValues = []string{
	"tok:1795751633688874", "tok:1795751633688874:w", "tok", "", ":", "tok:", "tok::w", "tok:12x",
	"a:b:c", "a:1:2", "tok:1:w:w", "tok:w", "uuid-4f1c", "tok~host%3A1.v%3Aal:17:w", "tok:007", "0:00000000",
	"tok:99999999999999999999999",
}

// SplitValue reads a lock's value as the scripts do (holder.lua).
func TestSplitValueAgreesWithTheScripts(t *testing.T) {
	t.Parallel()
	rdb := redistest.NewServer(t).Client()
	read := holderLua + holderValueLua + "\nreturn {token_of(ARGV[1]), since_of(ARGV[1]) or 0, " +
		"holds(ARGV[1], ARGV[2]) and 1 or 0, holds(ARGV[1], 'tok') and 1 or 0}"
	for _, v := range lockValues {
		token, since := SplitValue(v)
		got, err := rdb.Eval(context.Background(), read, nil, v, token).Slice()
		if err != nil {
			t.Fatalf("%q: %v", v, err)
		}
		if got[0] != token || since != 0 && got[1] != since { // (Lua's number of 23 digits is no int64)
			t.Errorf("%q: the scripts read token %q, since %v; SplitValue %q, %d", v, got[0], got[1], token, since)
		}
		if got[2] != int64(1) || (got[3] == int64(1)) != (token == "tok") {
			t.Errorf("%q: holds says %v for its token %q, %v for \"tok\"", v, got[2], token, got[3])
		}
	}
}

func FuzzSplitValue(f *testing.F) {
	for _, v := range lockValues {
		f.Add(v)
	}
	f.Fuzz(func(t *testing.T, v string) {
		token, since := SplitValue(v)
		if strings.Contains(token, ":") || !strings.HasPrefix(v, token) {
			t.Fatalf("%q: token %q", v, token)
		}
		if rest := strings.TrimPrefix(v, token); since != 0 && rest != ":"+strconv.FormatInt(since, 10) && rest != ":"+strconv.FormatInt(since, 10)+":w" &&
			strings.TrimLeft(strings.TrimSuffix(rest, ":w"), ":0") != strconv.FormatInt(since, 10) {
			t.Fatalf("%q: since %d", v, since)
		}
	})
}

// Scan tells a lock's value from other strings by its first and last
// bytes.
func TestLooksLikeLock(t *testing.T) {
	t.Parallel()
	random := strings.Repeat("aZ9-_", 5)[:RandomTokenLen]
	for _, c := range []struct {
		value string
		want  bool
	}{
		{random + ":1795751633688874", true},
		{random + ":1795751633688874:w", true},
		{random + "~vm pid 1 (x).value:1795751633688874", true},
		{random + ".v:1", true},
		{random, false},                   // a token alone (a Redlock node's, which its fence key lists)
		{random + ":", false},             // no since
		{random + ":17x", false},          // not digits
		{"short:1795751633688874", false}, // not a token
		{strings.Repeat("!", RandomTokenLen) + ":1", false},
		{"", false},
	} {
		head, tail := c.value[:min(len(c.value), RandomTokenLen+1)], c.value[max(0, len(c.value)-valueTailLen):]
		if got := looksLikeLock(head, tail); got != c.want {
			t.Errorf("looksLikeLock(%q) = %v, want %v", c.value, got, c.want)
		}
	}
}

// A lock nobody waits for holds "token:since"; a waiter that joins its
// queue marks it "token:since:w", and its release then hands it over to
// the waiter, marked again only while others wait behind it.
func TestWaiterMarksTheLock(t *testing.T) {
	t.Parallel()
	srv := redistest.NewServer(t)
	rdb := srv.Client()
	ctx := context.Background()
	n := newNode(rdb, ReplicaAck{}, batchLanes, nil)
	keys := queueKeys("mark:lock")
	run := func(o op) reply { t.Helper(); return mustRun(t, n, o) }
	attemptOf := func(token string, wait bool) attempt {
		a := attempt{kind: KindLock, keys: keys, token: token, arg: token, ttl: time.Minute, fair: wait,
			rel: releaseSetting{counted: n.counted, markerTTL: 60000}}
		if wait {
			a.lease = waitLease
		}
		return a
	}
	valueIs := func(want string) {
		t.Helper()
		v := rdb.Get(ctx, "mark:lock").Val()
		token, since := SplitValue(v)
		if token+strings.TrimPrefix(v, token+":"+strconv.FormatInt(since, 10)) != want || since <= 0 {
			t.Errorf("the lock holds %q, want %q with a since", v, want)
		}
	}
	holder := attemptOf("holder", false)
	if r := run(holder.op()); r.code != acquired || r.value <= 0 {
		t.Fatalf("holder: %+v", r)
	}
	valueIs("holder")
	if r := run(attemptOf("w1", true).op()); r.code != held {
		t.Fatalf("w1: %+v", r)
	}
	valueIs("holder:w")
	if r := run(attemptOf("w2", true).op()); r.code != held {
		t.Fatalf("w2: %+v", r)
	}
	valueIs("holder:w")
	if r := run(holder.undo(false)); r.code != ours {
		t.Fatalf("release: %+v", r)
	}
	valueIs("w1:w") // handed over, with w2 behind it
	w1 := attemptOf("w1", false)
	if r := run(w1.undo(false)); r.code != ours {
		t.Fatalf("w1's release: %+v", r)
	}
	valueIs("w2") // handed over, nobody behind
	if n := rdb.Exists(ctx, keys[2], keys[3]).Val(); n != 0 {
		t.Errorf("%d keys of the queue are left with nobody in it", n)
	}
}

// TestRefreshNamesItsLockByValue runs refresh.lua on the values a lock's
// refresh can find: it names the lock by the value its acquire set,
// "token:since", and must also find it marked as waited for since, by a
// token alone (a Redlock node's lock), and never another holder's.
func TestRefreshNamesItsLockByValue(t *testing.T) {
	t.Parallel()
	rdb := redistest.NewServer(t).Client()
	ctx := context.Background()
	const theirs = 0
	for _, c := range []struct {
		stored, arg string
		want        int64
	}{
		{"tok:1764220000000000", "tok:1764220000000000", ours},
		{"tok:1764220000000000:w", "tok:1764220000000000", ours}, // marked since
		{"tok:1764220000000001", "tok:1764220000000000", ours},   // a since the caller did not know
		{"tok", "tok", ours},                                       // a Redlock node's lock
		{"tok:1764220000000000", "tok", ours},                      // the token alone
		{"other:1764220000000000", "tok:1764220000000000", theirs}, // another holder's
		{"tokx:1764220000000000", "tok:1764220000000000", theirs},  // whose token starts as ours
		{"tok:1764220000000000", "tokx:1764220000000000", theirs},  // ours is longer
		{"", "tok:1764220000000000", theirs},                       // none: the key is missing
	} {
		key := "refresh-by-value:" + c.stored + ">" + c.arg
		keys := []string{key, "{" + key + "}:fence", "{" + key + "}:freed"}
		if c.stored != "" {
			if err := rdb.Set(ctx, key, c.stored, time.Minute).Err(); err != nil {
				t.Fatal(err)
			}
		}
		got, err := rdb.Eval(ctx, refreshScript.src, keys, c.arg, 30000).Int64()
		if err != nil {
			t.Fatalf("%q named %q: %v", c.stored, c.arg, err)
		}
		if got != c.want {
			t.Errorf("%q named %q: refresh.lua says %v, want %v", c.stored, c.arg, got, c.want)
		}
		if pttl := rdb.PTTL(ctx, key).Val(); c.want == ours && pttl > 30*time.Second {
			t.Errorf("%q named %q: refreshed, but its ttl is still %v", c.stored, c.arg, pttl)
		}
	}
}

// TestRefreshArgIsTheValue checks that a lock's refresh names it by the
// value Redis holds, so that refresh.lua's whole compare finds it: after an
// acquire, a default waiter's acquire and a fair waiter's handoff.
func TestRefreshArgIsTheValue(t *testing.T) {
	t.Parallel()
	rdb := redistest.NewServer(t).Client()
	e := newTestEngine(t, rdb)
	ctx := context.Background()
	named := func(h *Hold) {
		t.Helper()
		if v := rdb.Get(ctx, h.Key()).Val(); h.refreshArg() != v {
			t.Errorf("a refresh names %q, whose value in Redis is %q", h.refreshArg(), v)
		}
	}
	first, err := e.TryObtain(ctx, "refresh-arg", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	named(first)
	for _, fair := range []bool{false, true} {
		cfg := testConfig
		cfg.Fair = fair
		cfg.AutoRenew = true // held, however slowly the test runs, until released
		next := make(chan *Hold, 1)
		go func() {
			h, _, err := e.Acquire(ctx, KindLock, e.Keys("refresh-arg"), time.Second, nil, true, cfg)
			if err != nil {
				t.Error(err)
			}
			next <- h
		}()
		testenv.Eventually(t, 10*time.Second, "the waiter to mark the lock", func() bool { return strings.HasSuffix(rdb.Get(ctx, "refresh-arg").Val(), ":w") })
		if err := first.Release(ctx); err != nil {
			t.Fatal(err)
		}
		if first = <-next; first == nil {
			return
		}
		named(first)
	}
}
