package dlock_test

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/dlock-go/dlock"
	"github.com/dlock-go/dlock/internal/slot"
	"github.com/dlock-go/dlock/internal/testenv"
	"github.com/dlock-go/dlock/internal/testenv/lockenv"
	"github.com/dlock-go/dlock/redistest"
)

// The slots of the keys of the tests of ObtainMulti on a Cluster of three
// primaries, which split the slots in three equal ranges: slotA and slotA2
// on the first primary, slotB on the second, slotC on the third.
const (
	slotA  = 100
	slotA2 = 101
	slotB  = 6000
	slotC  = 12000
)

// keyInSlot returns a key of the test in slot s.
func keyInSlot(t testing.TB, s int, name string) string {
	return "{" + slot.Tag(s) + "}" + testenv.Key(t) + ":" + name
}

// slotKeys returns a key of the test in each of the slots C, A, B and A2,
// named so that sorting them does not put them in slot order.
func slotKeys(t testing.TB) []string {
	return []string{keyInSlot(t, slotC, "a"), keyInSlot(t, slotA, "d"), keyInSlot(t, slotB, "b"), keyInSlot(t, slotA2, "c")}
}

// fenceOf returns the fence stored for the lock key (see internal/engine's
// keys.go: a key with a hash tag keeps it).
func fenceOf(ctx context.Context, t testing.TB, rdb redis.Cmdable, key string) int64 {
	t.Helper()
	v, err := rdb.Get(ctx, "dlock:fence:"+key).Int64()
	if err != nil {
		t.Fatalf("the fence of %s: %v", key, err)
	}
	return v
}

// existing counts the keys that exist, one slot at a time (EXISTS of keys
// in several slots is refused).
func existing(ctx context.Context, rdb redis.Cmdable, keys []string) int {
	n := 0
	for _, key := range keys {
		if rdb.Exists(ctx, key).Val() != 0 {
			n++
		}
	}
	return n
}

// On a Cluster, keys in several slots are taken as one Lock, all or none:
// every key holds its token and records its fence, which is larger than
// every earlier holder's of every key; TTL, Refresh, ReleaseAfter and
// Release act on every slot, a key found gone is the Lock lost and its
// other keys let go, a renewed Lock is renewed in every slot, and a waiter
// takes the keys once the one held is released.
func TestObtainMultiSlots(t *testing.T) {
	t.Parallel()
	cluster := redistest.NewCluster(t, 3, 0)
	rdb := cluster.Client()
	locker := lockenv.Locker(t, rdb)
	if a, b, c := cluster.PrimaryOfSlot(slotA), cluster.PrimaryOfSlot(slotB), cluster.PrimaryOfSlot(slotC); a == b || b == c || a == c {
		t.Fatalf("slots %d, %d and %d share a primary", slotA, slotB, slotC)
	}

	t.Run("held as one", func(t *testing.T) {
		ctx := testenv.Timeout(t, 20*time.Second)
		keys := slotKeys(t)
		// An earlier holder of the key in slot B had a fence far above the
		// server time of every primary.
		high := time.Now().Add(time.Hour).UnixMicro()
		if err := rdb.Set(ctx, "dlock:fence:"+keys[2], strconv.FormatInt(high, 10), time.Minute).Err(); err != nil {
			t.Fatal(err)
		}
		lock, err := locker.TryObtainMulti(ctx, keys, time.Minute)
		if err != nil {
			t.Fatalf("TryObtainMulti of keys in several slots: %v", err)
		}
		if got, want := lock.Key(), slices.Min(keys); got != want {
			t.Errorf("Key = %q, want the first of the sorted keys, %q", got, want)
		}
		if lock.Fence() <= high {
			t.Errorf("Fence = %d, want more than the earlier holder's %d", lock.Fence(), high)
		}
		for _, key := range keys {
			if v := rdb.Get(ctx, key).Val(); v != lock.Token() {
				t.Errorf("%s holds %q, want the Lock's token", key, v)
			}
			if f := fenceOf(ctx, t, rdb, key); f != lock.Fence() {
				t.Errorf("the fence of %s is %d, want the Lock's, %d", key, f, lock.Fence())
			}
			info, err := locker.Inspect(ctx, key)
			if err != nil {
				t.Fatal(err)
			}
			if !info.Held || info.Kind != "multi" || info.Fingerprint != lock.Fingerprint() || info.Fence != lock.Fence() {
				t.Errorf("Inspect(%s) = held %v, kind %q, fingerprint %q, fence %d; want the Lock's, \"multi\", %q and %d", key, info.Held, info.Kind, info.Fingerprint, info.Fence, lock.Fingerprint(), lock.Fence())
			}
			if want := slices.Sorted(slices.Values(keys)); !slices.Equal(info.Keys, want) {
				t.Errorf("Inspect(%s).Keys = %q, want every key of the Lock, %q", key, info.Keys, want)
			}
			if _, err := locker.TryObtain(ctx, key, time.Minute); !errors.Is(err, dlock.ErrNotObtained) {
				t.Errorf("TryObtain(%s) of a key the Lock holds = %v, want ErrNotObtained", key, err)
			}
		}
		if err := lock.Release(ctx); err != nil {
			t.Fatalf("Release: %v", err)
		}
		mustBeFree(ctx, t, rdb, keys...)
		for _, key := range keys {
			if n := rdb.Exists(ctx, "dlock:multi:"+key).Val(); n != 0 {
				t.Errorf("the holding key of %s is left after the Release", key)
			}
		}
		if err := lock.Release(ctx); !errors.Is(err, dlock.ErrNotHeld) {
			t.Errorf("a second Release = %v, want ErrNotHeld", err)
		}
		// The next holder of any one key gets a larger fence.
		next := mustObtain(t, locker, keys[0], time.Minute)
		if next.Fence() <= lock.Fence() {
			t.Errorf("the next holder of %s has fence %d, want more than %d", keys[0], next.Fence(), lock.Fence())
		}
		if err := next.Release(ctx); err != nil {
			t.Fatal(err)
		}
	})

	t.Run("a slot held rolls back the others", func(t *testing.T) {
		ctx := testenv.Timeout(t, 20*time.Second)
		keys := slotKeys(t)
		for _, blocked := range []string{keys[0], keys[2]} { // the last slot, then the middle one
			mustRollBack(ctx, t, rdb, locker, keys, blocked)
		}
		// A key of another type in the last slot: nothing is left either.
		mustRefuseWrongType(ctx, t, rdb, locker, keys, keys[0])
	})

	t.Run("refresh, ttl, release after, lost", func(t *testing.T) {
		ctx := testenv.Timeout(t, 20*time.Second)
		keys := slotKeys(t)
		lock, err := locker.TryObtainMulti(ctx, keys, time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		if err := lock.Refresh(ctx, 10*time.Minute); err != nil {
			t.Fatalf("Refresh: %v", err)
		}
		for _, key := range keys {
			if ttl := rdb.PTTL(ctx, key).Val(); ttl <= time.Minute {
				t.Errorf("%s expires in %v after a Refresh to 10 minutes", key, ttl)
			}
		}
		if ttl, err := lock.TTL(ctx); err != nil || ttl <= time.Minute || ttl > 10*time.Minute {
			t.Errorf("TTL = %v, %v; want more than a minute, at most 10", ttl, err)
		}
		// One key gone: the Lock is lost, and its other keys are let go.
		if err := rdb.Del(ctx, keys[2]).Err(); err != nil {
			t.Fatal(err)
		}
		if err := lock.Refresh(ctx, time.Minute); !errors.Is(err, dlock.ErrNotHeld) {
			t.Errorf("Refresh with a key gone = %v, want ErrNotHeld", err)
		}
		if err := lock.Err(); !errors.Is(err, dlock.ErrLockLost) {
			t.Errorf("Err = %v, want ErrLockLost", err)
		}
		mustBeFree(ctx, t, rdb, keys...)

		lock, err = locker.TryObtainMulti(ctx, keys, time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		if err := lock.ReleaseAfter(ctx, 30*time.Second); err != nil {
			t.Fatalf("ReleaseAfter: %v", err)
		}
		for _, key := range keys {
			if ttl := rdb.PTTL(ctx, key).Val(); ttl <= 0 || ttl > 30*time.Second {
				t.Errorf("%s expires in %v after ReleaseAfter 30s", key, ttl)
			}
		}
		if err := lock.Err(); !errors.Is(err, dlock.ErrReleased) {
			t.Errorf("Err after ReleaseAfter = %v, want ErrReleased", err)
		}
		for _, key := range keys {
			rdb.Del(ctx, key)
		}

		lock, err = locker.TryObtainMulti(ctx, keys, time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		if err := rdb.Del(ctx, keys[1]).Err(); err != nil {
			t.Fatal(err)
		}
		if _, err := lock.TTL(ctx); !errors.Is(err, dlock.ErrNotHeld) {
			t.Errorf("TTL with a key gone = %v, want ErrNotHeld", err)
		}
		mustBeFree(ctx, t, rdb, keys...)
		if err := lock.Release(ctx); !errors.Is(err, dlock.ErrNotHeld) {
			t.Errorf("Release of a lost Lock = %v, want ErrNotHeld", err)
		}
	})

	t.Run("renewed in every slot, lost with one", func(t *testing.T) {
		ctx := testenv.Timeout(t, 30*time.Second)
		keys := slotKeys(t)
		mustRenewThenLose(ctx, t, rdb, locker, keys, keys[0])
	})

	t.Run("waiter woken by a release", func(t *testing.T) {
		ctx := testenv.Timeout(t, 30*time.Second)
		keys := slotKeys(t)
		mustWakeOnRelease(ctx, t, rdb, locker, keys, keys[2])
	})

	t.Run("opposite orders", func(t *testing.T) {
		ctx := testenv.Timeout(t, 2*time.Minute)
		keys := []string{keyInSlot(t, slotA, "a"), keyInSlot(t, slotB, "b"), keyInSlot(t, slotC, "c")}
		newLocker := func() *dlock.Client { return lockenv.Locker(t, rdb) }
		contendInOppositeOrders(ctx, t, newLocker, keys, 6, 20)
		mustBeFree(ctx, t, rdb, keys...)
	})

	t.Run("bad input", func(t *testing.T) {
		ctx := testenv.Timeout(t, 20*time.Second)
		keys := slotKeys(t)
		for _, c := range []struct {
			name string
			keys []string
			opts []dlock.ObtainOption
			want error
		}{
			{"empty key", append(slices.Clone(keys), ""), nil, dlock.ErrInvalidKey},
			{"fair", keys, []dlock.ObtainOption{dlock.WithFair()}, dlock.ErrInvalidOption},
			{"record", keys, []dlock.ObtainOption{dlock.AsRecord()}, dlock.ErrInvalidOption},
		} {
			if _, err := locker.ObtainMulti(ctx, c.keys, time.Minute, c.opts...); !errors.Is(err, c.want) {
				t.Errorf("%s: ObtainMulti = %v, want %v", c.name, err, c.want)
			}
		}
		mustBeFree(ctx, t, rdb, keys...)
		// A Redlock whose node is a Cluster takes keys of one slot only.
		redlock, err := dlock.NewRedlock([]redis.UniversalClient{rdb})
		if err != nil {
			t.Fatal(err)
		}
		defer redlock.Close()
		if _, err := redlock.TryObtainMulti(ctx, keys, time.Minute); !errors.Is(err, dlock.ErrInvalidKey) {
			t.Errorf("TryObtainMulti of keys in several slots on a Redlock of a Cluster = %v, want ErrInvalidKey", err)
		}
		mustBeFree(ctx, t, rdb, keys...)
	})

	t.Run("one slot", func(t *testing.T) {
		ctx := testenv.Timeout(t, 20*time.Second)
		keys := []string{keyInSlot(t, slotB, "x"), keyInSlot(t, slotB, "y")}
		lock, err := locker.TryObtainMulti(ctx, keys, time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		if err := lock.Release(ctx); err != nil {
			t.Fatal(err)
		}
		mustBeFree(ctx, t, rdb, keys...)
	})
}

// On a Cluster with go-redis's default options, a multi-key acquire whose
// caller gave up while the primary of one of its slots was paused (long
// enough for go-redis to send the script again) leaves nothing on any key
// once the primary answers; a renewed Lock whose primary of one slot stops
// answering is lost, and its keys are free again afterwards.
func TestObtainMultiSlotsPaused(t *testing.T) {
	t.Parallel()
	cluster := redistest.NewCluster(t, 3, 0)
	rdb := cluster.Client() // go-redis's defaults: MaxRetries 3, ReadTimeout 5 s
	first := dlock.New(rdb)
	t.Cleanup(func() { first.Close() })
	keys := slotKeys(t)
	warm, err := first.TryObtainMulti(context.Background(), keys, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if err := warm.Release(context.Background()); err != nil {
		t.Fatal(err)
	}

	paused := cluster.PrimaryOfSlot(slotB)
	paused.Pause()
	_, err = first.TryObtainMulti(testenv.Timeout(t, 300*time.Millisecond), keys, time.Minute)
	if !errors.Is(err, dlock.ErrOutcomeUnknown) {
		t.Errorf("TryObtainMulti with a primary paused = %v, want ErrOutcomeUnknown", err)
	}
	time.Sleep(testenv.ResendPause) // go-redis sends the script again meanwhile
	paused.Resume()
	first.Close() // waits for the take-back in the background
	ctx := testenv.Timeout(t, 30*time.Second)
	if n := existing(ctx, rdb, keys); n != 0 {
		t.Errorf("%d of the keys are left after the take-back", n)
	}

	locker := lockenv.Locker(t, rdb)
	lock, err := locker.TryObtainMulti(ctx, keys, time.Second, dlock.WithAutoRenew(true))
	if err != nil {
		t.Fatal(err)
	}
	paused = cluster.PrimaryOfSlot(slotC)
	paused.Pause()
	select {
	case <-lock.Done():
	case <-ctx.Done():
		t.Fatal("the Lock did not end while a primary of its keys was paused")
	}
	paused.Resume()
	if err := lock.Err(); !errors.Is(err, dlock.ErrLockLost) {
		t.Errorf("Err = %v, want ErrLockLost", err)
	}
	testenv.Eventually(t, 20*time.Second, "the keys free", func() bool {
		l, err := locker.TryObtainMulti(ctx, keys, time.Minute)
		return err == nil && l.Release(ctx) == nil
	})
}
