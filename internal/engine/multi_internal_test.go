package engine

import (
	"context"
	"fmt"
	"testing"
	"time"

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
		"multi_raise_fence": multiRaiseFenceScript,
	} {
		sha, err := rdb.ScriptLoad(context.Background(), s.src).Result()
		if err != nil || sha != s.sha {
			t.Errorf("SCRIPT LOAD %s = %q, %v; want sha %s", name, sha, err, s.sha)
		}
	}
}

// Every copy of a multi-key call answers as the first did: an acquire sent
// twice finds its locks with the same fence; a release sent twice finds
// its markers; another release of the holding learns it came second; a
// release that found a lock gone says so, and so do its copies.
func TestMultiCallsSentTwice(t *testing.T) {
	t.Parallel()
	rdb := redistest.NewServer(t).Client()
	n := newNode(rdb, ReplicaAck{}, batchLanes, nil)
	e := &Engine{node: n, nodes: []*node{n}, markerTTL: int64(60000)}
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
	rdb := redistest.NewServer(t).Client()
	n := newNode(rdb, ReplicaAck{}, batchLanes, nil)
	e := &Engine{node: n, nodes: []*node{n}, markerTTL: int64(60000)}
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
	rdb := redistest.NewServer(t).Client()
	n := newNode(rdb, ReplicaAck{}, batchLanes, nil)
	n.fenceless = true
	e := &Engine{node: n, nodes: []*node{n}, markerTTL: int64(60000)}
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
