package engine

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/dlock-go/dlock/internal/slot"
	"github.com/dlock-go/dlock/redistest"
)

// The copies of one call that go-redis sends again, run here one after the
// other with the same arguments, as Redis runs them once it answers: every
// copy answers as the first did, and only the first has an effect.

// resendEnv is a server, a client, and a Client on it.
type resendEnv struct {
	rdb *redis.Client
	c   *Engine
}

func newResendEnv(t *testing.T) resendEnv {
	t.Helper()
	srv := redistest.NewServer(t)
	rdb := srv.Client()
	c := newTestEngine(t, rdb)
	t.Cleanup(func() { c.Close() })
	return resendEnv{rdb: rdb, c: c}
}

// twice runs o twice, as two copies of one call, and returns both replies.
func (e resendEnv) twice(t *testing.T, o op) (first, second reply) {
	t.Helper()
	var err error
	if first, err = e.c.run(context.Background(), o); err != nil {
		t.Fatalf("first copy: %v", err)
	}
	if second, err = e.c.run(context.Background(), o); err != nil {
		t.Fatalf("second copy: %v", err)
	}
	return first, second
}

func (e resendEnv) obtain(t *testing.T, key string) *Hold {
	t.Helper()
	l, err := e.c.TryObtain(context.Background(), key, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

func TestReleaseCopyAnswersAsTheFirst(t *testing.T) {
	t.Parallel()
	e := newResendEnv(t)
	ctx := context.Background()

	t.Run("deleted", func(t *testing.T) {
		l := e.obtain(t, "resend:deleted")
		first, second := e.twice(t, l.releaseOp())
		if first.code != ours || second.code != ours {
			t.Errorf("release copies answered %d, %d; want %d, %d", first.code, second.code, ours, ours)
		}
	})

	t.Run("taken by another client in between", func(t *testing.T) {
		l := e.obtain(t, "resend:taken")
		o := l.releaseOp()
		if r, err := e.c.run(ctx, o); err != nil || r.code != ours {
			t.Fatalf("first copy: %+v, %v", r, err)
		}
		if !e.rdb.SetNX(ctx, l.key, "other", time.Minute).Val() {
			t.Fatal("another client's SET NX failed on the released lock")
		}
		if r, err := e.c.run(ctx, o); err != nil || r.code != ours {
			t.Errorf("second copy: %+v, %v; want released (%d)", r, err, ours)
		}
		if v := e.rdb.Get(ctx, l.key).Val(); v != "other" {
			t.Errorf("the other client's lock holds %q, want it untouched", v)
		}
	})

	t.Run("handed over to a waiter", func(t *testing.T) {
		l := e.obtain(t, "resend:handover")
		ps := e.rdb.Subscribe(ctx, "channel:waiter")
		defer ps.Close()
		if _, err := ps.Receive(ctx); err != nil {
			t.Fatal(err)
		}
		w := e.c.newAttempt(KindLock, queueKeys(l.key), time.Minute, nil, Config{Fair: true})
		w.lease, w.notify = FairLease, "channel:waiter"
		if r, err := e.c.run(ctx, w.op()); err != nil || r.code != held {
			t.Fatalf("the waiter joins the queue: %+v, %v", r, err)
		}
		first, second := e.twice(t, l.releaseOp())
		if first.code != ours || second.code != ours {
			t.Errorf("release copies answered %d, %d; want %d, %d", first.code, second.code, ours, ours)
		}
		if v, _ := SplitValue(e.rdb.Get(ctx, l.key).Val()); v != w.token {
			t.Errorf("the lock holds %q after the handover, want the waiter's token", v)
		}
	})

	t.Run("another release of the same lock", func(t *testing.T) {
		l := e.obtain(t, "resend:another")
		if r, _ := e.c.run(ctx, l.releaseOp()); r.code != ours {
			t.Fatalf("first release: %+v", r)
		}
		if r, _ := e.c.run(ctx, l.releaseOp()); r.code != releasedBefore {
			t.Errorf("a second release call: %+v, want released before (%d)", r, releasedBefore)
		}
	})

	t.Run("release storing", func(t *testing.T) {
		l := e.obtain(t, "{resend:storing}:lock")
		o := l.releaseStoringOp("{resend:storing}:result", []byte("done"), time.Minute)
		if r, _ := e.c.run(ctx, o); r.code != ours {
			t.Fatalf("first copy: %+v", r)
		}
		if !e.rdb.SetNX(ctx, l.key, "other", time.Minute).Val() {
			t.Fatal("another client's SET NX failed on the released lock")
		}
		if r, _ := e.c.run(ctx, o); r.code != ours {
			t.Errorf("second copy: %+v, want stored (%d)", r, ours)
		}
		other := l.releaseStoringOp("{resend:storing}:result", []byte("other"), time.Minute)
		if r, _ := e.c.run(ctx, other); r.code != releasedBefore {
			t.Errorf("another ReleaseStoring of the lock: %+v, want released before (%d): it stored nothing", r, releasedBefore)
		}
		if v := e.rdb.Get(ctx, "{resend:storing}:result").Val(); v != "done" {
			t.Errorf("stored %q, want the first call's value", v)
		}
	})

	t.Run("release after", func(t *testing.T) {
		l := e.obtain(t, "resend:after")
		o := l.releaseAfterOp(time.Second)
		if r, _ := e.c.run(ctx, o); r.code != ours {
			t.Fatalf("first copy: %+v", r)
		}
		e.rdb.PExpire(ctx, l.key, 100*time.Millisecond) // as if the time had passed
		if r, _ := e.c.run(ctx, o); r.code != ours {
			t.Errorf("second copy: %+v, want kept (%d)", r, ours)
		}
		if ttl := e.rdb.PTTL(ctx, l.key).Val(); ttl > 100*time.Millisecond {
			t.Errorf("the copy set the ttl again to %v: the lock is kept longer than asked", ttl)
		}
	})

	t.Run("refresh after the release of the lock", func(t *testing.T) {
		l := e.obtain(t, "resend:refresh")
		if r, _ := e.c.run(ctx, l.releaseOp()); r.code != ours {
			t.Fatalf("release: %+v", r)
		}
		if r, _ := e.c.run(ctx, l.refreshOp(time.Minute)); r.code != releasedBefore {
			t.Errorf("refresh after the release: %+v, want released before (%d), not lost", r, releasedBefore)
		}
	})

	t.Run("quiet", func(t *testing.T) {
		// A Redlock attempt's take-back: released once, the copy answers so.
		l := e.obtain(t, "resend:quiet")
		first, second := e.twice(t, l.attempt().undo(true))
		if first.code != ours || second.code != ours {
			t.Errorf("take-back copies answered %d, %d; want %d, %d", first.code, second.code, ours, ours)
		}
	})

	t.Run("leave", func(t *testing.T) {
		key := "resend:leave"
		holder := e.obtain(t, key)
		w := e.c.newAttempt(KindLock, queueKeys(key), time.Minute, nil, Config{Fair: true})
		w.lease, w.notify = FairLease, ""
		if r, err := e.c.run(ctx, w.op()); err != nil || r.code != held {
			t.Fatalf("the waiter joins the queue: %+v, %v", r, err)
		}
		if err := holder.Release(ctx); err != nil {
			t.Fatal(err)
		}
		// The release handed the lock over to the waiter, which gives up
		// before it hears of it: its leave releases it, twice.
		if v, _ := SplitValue(e.rdb.Get(ctx, key).Val()); v != w.token {
			t.Fatalf("the lock holds %q, want the waiter's token", v)
		}
		first, second := e.twice(t, w.undo(false))
		if first.code != ours || second.code != ours {
			t.Errorf("leave copies answered %d, %d; want %d, %d", first.code, second.code, ours, ours)
		}
		if n := e.rdb.Exists(ctx, key).Val(); n != 0 {
			t.Error("the lock is still held after the leave")
		}
	})
}

func TestHoldReleaseCopyAnswersAsTheFirst(t *testing.T) {
	t.Parallel()
	e := newResendEnv(t)
	ctx := context.Background()
	for _, tc := range []struct {
		name    string
		acquire func(key string) (*Hold, error)
	}{
		{"semaphore", func(key string) (*Hold, error) { return e.c.Semaphore(key, 2).TryAcquire(ctx, time.Minute) }},
		{"read", func(key string) (*Hold, error) { return e.c.RWMutex(key).TryRLock(ctx, time.Minute) }},
		{"write", func(key string) (*Hold, error) { return e.c.RWMutex(key).TryLock(ctx, time.Minute) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			key := "resend:hold:" + tc.name
			l, err := tc.acquire(key)
			if err != nil {
				t.Fatal(err)
			}
			o := l.releaseOp()
			if r, _ := e.c.run(ctx, o); r.code != ours {
				t.Fatalf("first copy: %+v", r)
			}
			other, err := tc.acquire(key) // another holder in between
			if err != nil {
				t.Fatal(err)
			}
			if r, _ := e.c.run(ctx, o); r.code != ours {
				t.Errorf("second copy: %+v, want released (%d)", r, ours)
			}
			if r, _ := e.c.run(ctx, l.releaseOp()); r.code != releasedBefore {
				t.Errorf("another release call: %+v, want released before (%d)", r, releasedBefore)
			}
			if _, err := other.TTL(ctx); err != nil {
				t.Errorf("the other holder's hold: %v, want it untouched", err)
			}
			after := l.releaseAfterOp(time.Minute)
			if r, _ := e.c.run(ctx, after); r.code != releasedBefore {
				t.Errorf("a ReleaseAfter of the released hold: %+v, want released before (%d)", r, releasedBefore)
			}
		})
	}
}

// The Redlock fence write-back and its hand-out, sent twice on a node:
// the copies hand out the fence the first did.
func TestRaiseFenceCopyAnswersAsTheFirst(t *testing.T) {
	t.Parallel()
	e := newResendEnv(t)
	ctx := context.Background()

	t.Run("lock", func(t *testing.T) {
		key := "resend:raise"
		if err := e.rdb.Set(ctx, key, "token-of-holder", time.Minute).Err(); err != nil {
			t.Fatal(err)
		}
		f := &fenceRaise{kind: KindLock, keys: lockKeys(key), token: "token-of-holder"}
		first, second := e.twice(t, f.op(0))
		if first.code != ours || second.code != ours || second.value != first.value {
			t.Errorf("hand-out copies: %+v, %+v; want the same fence", first, second)
		}
		stored := first.value + 1000
		first, second = e.twice(t, f.op(stored))
		if first.code != ours || second.code != ours || first.value != stored || second.value != stored {
			t.Errorf("write-back copies: %+v, %+v; want both %d", first, second, stored)
		}
	})

	t.Run("semaphore", func(t *testing.T) {
		key := "resend:raise:sem"
		l, err := e.c.Semaphore(key, 2).TryAcquire(ctx, time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		f := &fenceRaise{kind: l.kind, keys: l.keys, token: l.arg}
		first, second := e.twice(t, f.op(0))
		if first.code != ours || second.code != ours || second.value != first.value {
			t.Errorf("hand-out copies: %+v, %+v; want the same fence", first, second)
		}
		if first.value != l.Fence() {
			t.Errorf("handed out %d, want the holder's fence on the node, %d", first.value, l.Fence())
		}
	})
}

// An acquire sent twice: the copy finds the caller's own token and answers
// with the fence the first wrote.
func TestAcquireCopyAnswersAsTheFirst(t *testing.T) {
	t.Parallel()
	e := newResendEnv(t)
	a := e.c.newAttempt(KindLock, queueKeys("resend:acquire"), time.Minute, nil, Config{})
	first, second := e.twice(t, a.op())
	if first.code != acquired || second.code != acquired || second.value != first.value {
		t.Errorf("acquire copies: %+v, %+v; want acquired twice with one fence", first, second)
	}
	sem := e.c.newAttempt(KindSemaphore, HoldKeys("resend:acquire:sem"), time.Minute, int64(2), Config{})
	first, second = e.twice(t, sem.op())
	if first.code != acquired || second.code != acquired || second.value != first.value {
		t.Errorf("semaphore acquire copies: %+v, %+v; want acquired twice with one fence", first, second)
	}
	if n := e.rdb.ZCard(context.Background(), "resend:acquire:sem").Val(); n != 1 {
		t.Errorf("%d permits held after two copies of one acquire, want 1", n)
	}
}

// The release marker is named as release.lua names it: in the lock key's
// Cluster slot, whatever the key's shape, and it lives as long as go-redis
// may send copies of one command (44 s with its defaults).
func TestReleaseMarker(t *testing.T) {
	t.Parallel()
	for _, key := range []string{"order:42", "{user}:42", "a}b", "", "a{b", "{}x"} {
		fence := sideKey(fenceKind, key)
		marker := "dlock:freed" + fence[len("dlock:fence"):] + ":token"
		if slot.Of(marker) != slot.Of(key) {
			t.Errorf("the marker of %q, %q, is in slot %d, the lock in %d", key, marker, slot.Of(marker), slot.Of(key))
		}
	}

	e := newResendEnv(t)
	ctx := context.Background()
	l := e.obtain(t, "resend:marker")
	if err := l.Release(ctx); err != nil {
		t.Fatal(err)
	}
	marker := "dlock:freed{resend:marker}:" + l.token
	if v := e.rdb.Get(ctx, marker).Val(); v != "1" {
		t.Errorf("the marker holds %q, want the call's number, 1", v)
	}
	if ttl := e.rdb.PTTL(ctx, marker).Val(); ttl <= 0 || ttl > 44*time.Second {
		t.Errorf("the marker lives %v more, want at most 44s (go-redis's defaults)", ttl)
	}
	for key, err := range e.c.ScanKeys(ctx, "*") {
		if err != nil {
			t.Fatal(err)
		}
		if in, err := e.c.Inspect(ctx, key); err != nil || in.Held {
			t.Errorf("Scan finds %q held after the release (%v)", key, err)
		}
	}
}

func TestResendWindow(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		rdb  redis.UniversalClient
		want time.Duration
	}{
		{"defaults", redis.NewClient(&redis.Options{}), 44 * time.Second},
		{"no retries", redis.NewClient(&redis.Options{MaxRetries: -1, ReadTimeout: 500 * time.Millisecond, MaxRetryBackoff: -1}), time.Second},
		{"short", redis.NewClient(&redis.Options{MaxRetries: 2, ReadTimeout: 100 * time.Millisecond, WriteTimeout: 100 * time.Millisecond, MaxRetryBackoff: 50 * time.Millisecond}), time.Second},
		{"long", redis.NewClient(&redis.Options{MaxRetries: 1, ReadTimeout: 10 * time.Second, WriteTimeout: 2 * time.Second, MaxRetryBackoff: time.Second}), 26 * time.Second},
		{"cluster", redis.NewClusterClient(&redis.ClusterOptions{Addrs: []string{"127.0.0.1:1"}, MaxRedirects: 1}), 2 * 11 * time.Second},
	} {
		if got := resendWindow(tc.rdb); got != tc.want {
			t.Errorf("%s: resendWindow = %v, want %v", tc.name, got, tc.want)
		}
		_ = tc.rdb.Close()
	}
}
