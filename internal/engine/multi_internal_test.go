package engine

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/dlock-go/dlock/internal/slot"
	"github.com/dlock-go/dlock/internal/wake"
	"github.com/dlock-go/dlock/redistest"
)

// The multi-key scripts load and run on a real server.
func TestMultiScriptsLoad(t *testing.T) {
	t.Parallel()
	rdb := redistest.NewServer(t).Client()
	for name, s := range map[string]*script{
		"multi_acquire": multiAcquireScript, "multi_release": multiReleaseScript,
		"multi_refresh": multiRefreshScript, "multi_ttl": multiTTLScript,
		"multi_raise_fence": multiRaiseFenceScript, "multi_store_fence": multiStoreFenceScript,
	} {
		sha, err := rdb.ScriptLoad(context.Background(), s.src).Result()
		if err != nil || sha != s.sha {
			t.Errorf("SCRIPT LOAD %s = %q, %v; want sha %s", name, sha, err, s.sha)
		}
	}
}

// multiNode returns a server of the test's own, a node on it, and an
// Engine on that node for the multi-key scripts' tests.
func multiNode(t *testing.T) (*redis.Client, *node, *Engine) {
	t.Helper()
	rdb := redistest.NewServer(t).Client()
	n := newNode(rdb, ReplicaAck{}, batchLanes, nil)
	return rdb, n, &Engine{node: n, nodes: []*node{n}, markerTTL: int64(60000)}
}

// Every copy of a multi-key call answers as the first did: an acquire sent
// twice finds its locks with the same fence; a release sent twice finds
// its markers; another release of the holding learns it came second; a
// release that found a lock gone says so, and so do its copies.
func TestMultiCallsSentTwice(t *testing.T) {
	t.Parallel()
	rdb, n, e := multiNode(t)
	ctx := context.Background()
	keys := []string{"a", "b", "c"}
	a := e.multiAttempt(keys, time.Minute, Config{})

	first, err := n.run(ctx, e.multiOp(a))
	if err != nil || first.code != acquired || first.value <= 0 {
		t.Fatalf("first acquire = %+v, %v", first, err)
	}
	again, err := n.run(ctx, e.multiOp(a))
	if err != nil || again.code != acquired || again.value != first.value {
		t.Errorf("the same acquire again = %+v, %v; want acquired with fence %d", again, err, first.value)
	}
	b := e.multiAttempt([]string{"c", "d"}, time.Minute, Config{})
	other, err := n.run(ctx, e.multiOp(b))
	if err != nil || other.code != held || other.token != "c" || other.value <= 0 {
		t.Errorf("another holder's acquire = %+v, %v; want held by c, with its pttl", other, err)
	}
	if rdb.Exists(ctx, "d").Val() != 0 {
		t.Error("the acquire that failed took d")
	}

	release := func(call int64) op {
		return releaseOp(KindMulti, a.keys, nil, nil, releaseArgv{holder: a.arg, call: call, releaseSetting: e.releaseSetting()})
	}
	for i, want := range []int64{ours, ours} {
		r, err := n.run(ctx, release(1))
		if err != nil || r.code != want {
			t.Errorf("release copy %d = %+v, %v; want code %d", i, r, err, want)
		}
	}
	if r, err := n.run(ctx, release(2)); err != nil || r.code != releasedBefore {
		t.Errorf("another release call = %+v, %v; want released before", r, err)
	}

	// A holding that lost a key: the release deletes the rest and says
	// "not ours", and so do its copies.
	c := e.multiAttempt(keys, time.Minute, Config{})
	if r, err := n.run(ctx, e.multiOp(c)); err != nil || r.code != acquired || r.value <= first.value {
		t.Fatalf("acquire after the release = %+v, %v; want a larger fence than %d", r, err, first.value)
	}
	rdb.Del(ctx, "b")
	lost := releaseOp(KindMulti, c.keys, nil, nil, releaseArgv{holder: c.arg, call: int64(1), releaseSetting: e.releaseSetting()})
	for i := range 2 {
		if r, err := n.run(ctx, lost); err != nil || r.code != notOurs {
			t.Errorf("release copy %d of a holding that lost a key = %+v, %v; want not ours", i, r, err)
		}
	}
	if rdb.Exists(ctx, "a", "c").Val() != 0 {
		t.Error("the release of a holding that lost a key left its other keys")
	}
}

// A refresh that finds one key gone lets go of the others; the ttl of a
// holding is the least of its keys'.
func TestMultiRefreshLost(t *testing.T) {
	t.Parallel()
	rdb, n, e := multiNode(t)
	ctx := context.Background()
	a := e.multiAttempt([]string{"a", "b"}, time.Minute, Config{})
	if r, err := n.run(ctx, e.multiOp(a)); err != nil || r.code != acquired {
		t.Fatalf("acquire = %+v, %v", r, err)
	}
	rdb.PExpire(ctx, "b", 30*time.Second)
	h := &Hold{e: e, kind: KindMulti, keys: a.keys, arg: a.arg}
	if r, err := n.run(ctx, h.ttlOp()); err != nil || r.code != ours || r.value > 30000 {
		t.Errorf("ttl = %+v, %v; want the least, at most 30s", r, err)
	}
	rdb.Set(ctx, "b", "other", time.Minute)
	if r, err := n.run(ctx, h.refreshOp(time.Minute)); err != nil || r.code != notOurs {
		t.Errorf("refresh with b taken = %+v, %v; want not ours", r, err)
	}
	if rdb.Exists(ctx, "a").Val() != 0 || rdb.Get(ctx, "b").Val() != "other" {
		t.Error("the refresh that found b taken did not let go of a alone")
	}
}

// A Redlock node's multi-key fence: handed out above every fence stored
// on the keys, the same to a copy of the call, and stored on every key.
func TestMultiRaiseFence(t *testing.T) {
	t.Parallel()
	rdb, n, e := multiNode(t)
	n.fenceless = true
	ctx := context.Background()
	rdb.Set(ctx, sideKey(fenceKind, "b"), "5000000000000000:other", time.Minute)
	e.quorum = &quorum{} // fenceless acquires
	a := e.multiAttempt([]string{"a", "b"}, time.Minute, Config{})
	if r, err := n.run(ctx, e.multiOp(a)); err != nil || r.code != acquired || r.value != 0 {
		t.Fatalf("fenceless acquire = %+v, %v; want acquired, no fence", r, err)
	}
	f := fenceRaise{kind: KindMulti, keys: a.keys, token: a.arg}
	first, err := n.run(ctx, f.op(0))
	if err != nil || first.code != ours || first.value <= 5000000000000000 {
		t.Fatalf("raise = %+v, %v; want above the stored fence", first, err)
	}
	again, err := n.run(ctx, f.op(0))
	if err != nil || again.value != first.value {
		t.Errorf("raise again = %+v, %v; want %d", again, err, first.value)
	}
	for _, key := range []string{"a", "b"} {
		if v, want := rdb.Get(ctx, sideKey(fenceKind, key)).Val(), fmt.Sprintf("%d:%s", first.value, fenceTag(a.arg)); v != want {
			t.Errorf("fence key of %s = %q, want %q", key, v, want)
		}
	}
}

// A multi-key waiter sleeps for its Backoff's delay, at least
// listeningMinDelay while it listens, never past the longest remaining
// time of the locks held.
func TestMultiWaiterDelay(t *testing.T) {
	t.Parallel()
	fixed := fixedBackoff(time.Second)
	for _, c := range []struct {
		name      string
		listening bool
		backoff   Backoff
		pttl      int64
		want      time.Duration
	}{
		{"backoff", false, fixed, 5000, time.Second},
		{"holder expires first", false, fixed, 300, 300 * time.Millisecond},
		{"no expiry", false, fixed, -1, time.Second},
		{"unknown", false, fixed, unknownTTL, time.Second},
		{"listening: at least the minimum", true, fixedBackoff(time.Millisecond), 5000, listeningMinDelay},
		{"listening: holder expires first", true, fixedBackoff(time.Millisecond), 10, 10 * time.Millisecond},
	} {
		w := multiWaiter{cfg: Config{Backoff: c.backoff}}
		if c.listening {
			w.watches = make([]*wake.Watch, 1)
		}
		if got := w.delay(1, reply{code: held, value: c.pttl}); got != c.want {
			t.Errorf("%s: delay = %v, want %v", c.name, got, c.want)
		}
	}
}

// The keys of a multi-key holding are grouped by Cluster slot, the groups
// in ascending slot order, each keeping the order of the keys.
func TestSlotGroups(t *testing.T) {
	t.Parallel()
	in := func(s int, name string) string { return "{" + slot.Tag(s) + "}" + name }
	for _, c := range []struct {
		keys []string
		want [][]int
	}{
		{[]string{"a"}, [][]int{{0}}},
		{[]string{"{x}a", "{x}b"}, [][]int{{0, 1}}},
		{[]string{in(900, "a"), in(5, "b"), in(900, "c"), in(7, "d")}, [][]int{{1}, {3}, {0, 2}}},
		{[]string{in(16383, "a"), in(0, "b")}, [][]int{{1}, {0}}},
	} {
		if got := slotGroups(c.keys); !slices.EqualFunc(got, c.want, slices.Equal) {
			t.Errorf("slotGroups(%q) = %v, want %v", c.keys, got, c.want)
		}
		if got, want := spansSlots(c.keys), len(c.want) > 1; got != want {
			t.Errorf("spansSlots(%q) = %v, want %v", c.keys, got, want)
		}
	}
}

// A slot part of an op has the keys of its positions, in each of the three
// blocks, and the op's ARGV.
func TestSlotPart(t *testing.T) {
	t.Parallel()
	e := &Engine{markerTTL: int64(60000)}
	a := e.multiAttempt([]string{"a", "b", "c"}, time.Minute, Config{})
	o := e.storeFenceOp(a, 42)
	p := o.slotPart([]int{0, 2})
	want := []string{a.keys[0], a.keys[2], a.keys[3], a.keys[5], a.keys[6], a.keys[8], a.keys[9], a.keys[11]}
	if !slices.Equal(p.keys, want) {
		t.Errorf("keys = %q, want %q", p.keys, want)
	}
	wantArgv := []any{"evalsha", multiStoreFenceScript.sha, len(want)}
	for _, key := range want {
		wantArgv = append(wantArgv, key)
	}
	if got := fmt.Sprint(p.argv); got != fmt.Sprint(append(wantArgv, a.arg, int64(42))) {
		t.Errorf("argv = %v", got)
	}
}

// multi_store_fence.lua stores the fence on every key where it is larger,
// once, and nothing when a lock is not the caller's.
func TestMultiStoreFence(t *testing.T) {
	t.Parallel()
	rdb, n, e := multiNode(t)
	ctx := context.Background()
	a := e.multiAttempt([]string{"a", "b"}, time.Minute, Config{})
	got, err := n.run(ctx, e.multiOp(a))
	if err != nil || got.code != acquired {
		t.Fatalf("acquire = %+v, %v", got, err)
	}
	fenceB := sideKey(fenceKind, "b")
	high := got.value + 1000
	if err := rdb.Set(ctx, fenceB, strconv.FormatInt(high+5, 10), time.Minute).Err(); err != nil {
		t.Fatal(err)
	}
	// The store runs as a user allowed the holding's keys alone: a key it
	// did not declare would be refused.
	patterns := []any{"ACL", "SETUSER", "fencer", "on", "nopass", "resetkeys", "+@all"}
	for _, key := range a.keys {
		patterns = append(patterns, "~"+key)
	}
	if err := rdb.Do(ctx, patterns...).Err(); err != nil {
		t.Fatal(err)
	}
	opts := *rdb.Options()
	opts.Username, opts.Password = "fencer", ""
	fencer := redis.NewClient(&opts)
	t.Cleanup(func() { _ = fencer.Close() })
	fn := newNode(fencer, ReplicaAck{}, batchLanes, nil)
	for range 2 { // a copy of the call changes nothing more
		r, err := fn.run(ctx, e.storeFenceOp(a, high))
		if err != nil || r.code != ours || r.value != high {
			t.Fatalf("store fence = %+v, %v; want ours, %d", r, err, high)
		}
		if v := rdb.Get(ctx, sideKey(fenceKind, "a")).Val(); v != strconv.FormatInt(high, 10) {
			t.Errorf("a's fence = %s, want %d", v, high)
		}
		if v := rdb.Get(ctx, fenceB).Val(); v != strconv.FormatInt(high+5, 10) {
			t.Errorf("b's larger fence = %s, want it kept, %d", v, high+5)
		}
		if ttl := rdb.PTTL(ctx, sideKey(fenceKind, "a")).Val(); ttl <= 0 {
			t.Errorf("a's fence expires in %v, want with the lock", ttl)
		}
	}
	rdb.Set(ctx, "b", "other", time.Minute)
	if r, err := n.run(ctx, e.storeFenceOp(a, high+100)); err != nil || r.code != notOurs {
		t.Errorf("store fence with b taken = %+v, %v; want notOurs", r, err)
	}
	if v := rdb.Get(ctx, sideKey(fenceKind, "a")).Val(); v != strconv.FormatInt(high, 10) {
		t.Errorf("a's fence = %s after a refused store, want %d", v, high)
	}
}

// The token of a multi-key holding is marked as one, and still tells its
// holder's name and value; a lock's is not.
func TestMultiToken(t *testing.T) {
	t.Parallel()
	cfg := Config{HolderSuffix: HolderSuffix("host:1"), ValueSuffix: ValueSuffix("v.2")}
	multi, lock := cfg.newMultiToken(), cfg.newToken()
	if !IsMultiToken(multi) || IsMultiToken(lock) || IsMultiToken(newToken()) || IsMultiToken("") {
		t.Errorf("IsMultiToken(%q, %q) = %v, %v; want true, false", multi, lock, IsMultiToken(multi), IsMultiToken(lock))
	}
	for _, token := range []string{multi, lock} {
		if holder, value := SplitToken(token); holder != "host:1" || value != "v.2" {
			t.Errorf("SplitToken(%q) = %q, %q; want host:1, v.2", token, holder, value)
		}
	}
	if holder, value := SplitToken(Config{}.newMultiToken()); holder != "" || value != "" {
		t.Errorf("SplitToken of a bare multi token = %q, %q", holder, value)
	}
	if strings.ContainsAny(multi, ":") {
		t.Errorf("a multi token holds a colon: %q", multi)
	}
}

// A holding key's value names the holding's token and lists its keys,
// whatever they hold; another token's, or no holding, lists none.
func TestHoldingEncoding(t *testing.T) {
	t.Parallel()
	for _, keys := range [][]string{
		{"a"},
		{"{x}:a", "{x}:b"},
		{"a:1:b", "", "new\nline", "\x00\xff", "12:34"},
	} {
		v := encodeHolding("tok", keys)
		if got, ok := decodeHolding(v, "tok"); !ok || !slices.Equal(got, keys) {
			t.Errorf("decodeHolding(%q) = %q, %v; want %q", v, got, ok, keys)
		}
		if got, ok := decodeHolding(v, "to"); ok {
			t.Errorf("decodeHolding(%q) of another token = %q", v, got)
		}
	}
	for _, v := range []string{"", "tok", "tok:", "tok:x:a", "tok:5:a", "tok:1:ab", "tok:-1:a", "tok:1:a:"} {
		if got, ok := decodeHolding(v, "tok"); ok {
			t.Errorf("decodeHolding(%q) = %q, want none", v, got)
		}
	}
}
