package engine

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/dlock-go/dlock/redistest"
)

// The queue of a lock on one deployment, step by step through its
// scripts: a release wakes the first barging waiter only; a newcomer may
// still take the free lock first; the waiter it beat then goes first by
// handoff at the next release; and a newcomer takes a free lock even with
// waiters queued, where a fair newcomer does not.
func TestQueueWakesOneAndHandsOverToTheOneBeaten(t *testing.T) {
	t.Parallel()
	srv := redistest.NewServer(t)
	rdb := srv.Client()
	ctx := context.Background()
	n := newNode(rdb, ReplicaAck{}, batchLanes, nil)
	keys := queueKeys("queue:steps")
	const ttl = time.Minute
	acquire := func(token string) attempt {
		return attempt{kind: KindLock, keys: keys, token: token, arg: token, ttl: ttl, rel: releaseSetting{counted: n.counted, markerTTL: int64(60000)}}
	}
	waiting := func(token string) attempt {
		o := acquire(token)
		o.lease, o.notify = waitLease, "channel:"+token
		return o
	}
	run := func(o op) reply { t.Helper(); return mustRun(t, n, o) }
	ps := rdb.Subscribe(ctx, "channel:w1", "channel:w2")
	defer ps.Close()
	if _, err := ps.Receive(ctx); err != nil { // both confirmed: one reply each
		t.Fatal(err)
	}
	if _, err := ps.Receive(ctx); err != nil {
		t.Fatal(err)
	}
	messages := ps.Channel()

	if r := run(acquire("holder").op()); r.code != acquired {
		t.Fatalf("holder: %+v", r)
	}
	if r := run(waiting("w1").op()); r.code != held || !r.head {
		t.Fatalf("w1 joins the queue first: %+v", r)
	}
	if r := run(waiting("w2").op()); r.code != held || r.head {
		t.Fatalf("w2 joins the queue second: %+v", r)
	}

	run(acquire("holder").undo(false)) // released: w1 alone is woken, to try
	if m := <-messages; m.Channel != "channel:w1" || m.Payload != "w1" {
		t.Fatalf("the release told %s %q, want w1 woken on its channel", m.Channel, m.Payload)
	}
	if r := run(acquire("newcomer").op()); r.code != acquired {
		t.Fatalf("a newcomer on the free lock: %+v, want it taken (barging)", r)
	}
	woken := waiting("w1")
	woken.woken = true
	if r := run(woken.op()); r.code != held || !r.head {
		t.Fatalf("w1, woken but beaten: %+v, want it first still", r)
	}

	run(acquire("newcomer").undo(false)) // released: handed over to w1, which was beaten
	if m := <-messages; m.Channel != "channel:w1" || !strings.HasPrefix(m.Payload, "w1:") {
		t.Fatalf("the release told %s %q, want the lock handed over to w1", m.Channel, m.Payload)
	}
	if v, _ := SplitValue(rdb.Get(ctx, "queue:steps").Val()); v != "w1" {
		t.Fatalf("the lock holds %q after the release, want w1's token", v)
	}
	if r := run(waiting("w1").op()); r.code != acquired {
		t.Fatalf("w1 after the handoff: %+v, want the lock its own", r)
	}

	run(acquire("w1").undo(false)) // w2 is woken
	if m := <-messages; m.Channel != "channel:w2" || m.Payload != "w2" {
		t.Fatalf("the release told %s %q, want w2 woken", m.Channel, m.Payload)
	}
	fair := acquire("fair-newcomer")
	fair.fair = true
	if r := run(fair.op()); r.code != held || r.value != -2 {
		t.Fatalf("a fair newcomer with w2 queued: %+v, want it to let w2 go first", r)
	}
	if r := run(acquire("newcomer2").op()); r.code != acquired {
		t.Fatalf("a plain newcomer with w2 queued: %+v, want the free lock its own", r)
	}
}

// A waiter that leaves once the guard (WithGuard) is stored passes the lock
// on to nobody: the waiter after it finds the guard, and would never
// release a lock handed to it.
func TestLeaveAfterGuardPassesNothingOn(t *testing.T) {
	t.Parallel()
	srv := redistest.NewServer(t)
	rdb := srv.Client()
	ctx := context.Background()
	n := newNode(rdb, ReplicaAck{}, batchLanes, nil)
	lockKey, guardKey := "{guard:leave}:lock", "{guard:leave}:result"
	waiting := func(token string) attempt {
		a := attempt{kind: KindLock, keys: queueKeys(lockKey), token: token, arg: token, ttl: time.Minute, fair: true,
			lease: FairLease, notify: "channel:" + token, rel: releaseSetting{counted: n.counted, markerTTL: int64(60000)}}
		a.guard(guardKey)
		return a
	}
	ps := rdb.Subscribe(ctx, "channel:w2") // w2's Client listens: a handoff would reach it
	defer ps.Close()
	if _, err := ps.Receive(ctx); err != nil {
		t.Fatal(err)
	}
	if err := rdb.Set(ctx, lockKey, "holder", time.Minute).Err(); err != nil {
		t.Fatal(err)
	}
	for _, w := range []string{"w1", "w2"} {
		if r, err := n.run(ctx, waiting(w).op()); err != nil || r.code != held {
			t.Fatalf("%s joins the queue: %+v, %v", w, r, err)
		}
	}
	// The holder's ReleaseStoring, as the script does it.
	if err := rdb.Set(ctx, guardKey, "done", time.Minute).Err(); err != nil {
		t.Fatal(err)
	}
	rdb.Del(ctx, lockKey)
	if _, err := n.run(ctx, waiting("w1").undo(false)); err != nil { // w1 found the guard and leaves
		t.Fatal(err)
	}
	if v := rdb.Get(ctx, lockKey).Val(); v != "" {
		t.Errorf("w1's leave handed the lock to %q, want nobody", v)
	}
}
