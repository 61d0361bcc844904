package dlock_test

import (
	"context"
	"errors"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/dlock-go/dlock"
	"github.com/dlock-go/dlock/internal/testenv"
	"github.com/dlock-go/dlock/internal/testenv/lockenv"
	"github.com/dlock-go/dlock/observe"
	"github.com/dlock-go/dlock/redistest"
)

// multiKeys returns n keys of the test, in one hash tag: fit for a
// Cluster too.
func multiKeys(t testing.TB, names ...string) []string {
	base := "{" + testenv.Key(t) + "}:"
	keys := make([]string, len(names))
	for i, name := range names {
		keys[i] = base + name
	}
	return keys
}

// Every key holds the Lock's token, one fence larger than every earlier
// holder's of each key is on every fence key, Inspect shows one holder on
// each, and Release frees them all.
func TestObtainMultiHoldsEveryKey(t *testing.T) {
	t.Parallel()
	ctx := testenv.Timeout(t, 20*time.Second)
	rdb := testenv.Client(t)
	locker := lockenv.Locker(t, rdb)
	keys := multiKeys(t, "b", "a", "c")

	var earlier int64
	for _, key := range keys {
		lock := mustObtain(t, locker, key, time.Minute)
		earlier = max(earlier, lock.Fence())
		if err := lock.Release(ctx); err != nil {
			t.Fatal(err)
		}
	}
	lock, err := locker.TryObtainMulti(ctx, append(keys, keys[0]), time.Minute)
	if err != nil {
		t.Fatalf("TryObtainMulti: %v", err)
	}
	// A lock's key, beside them, shows Kind "lock".
	single := mustObtain(t, locker, testenv.Key(t)+":single", time.Minute)
	plain, err := locker.Inspect(ctx, single.Key())
	if err != nil || plain.Kind != "lock" || plain.HolderName == "" || plain.Keys != nil {
		t.Fatalf("Inspect of a lock = kind %q, holder name %q, keys %q, %v; want \"lock\", a name and no keys", plain.Kind, plain.HolderName, plain.Keys, err)
	}
	if got, want := lock.Key(), keys[1]; got != want {
		t.Errorf("Key = %q, want the first of the sorted keys, %q", got, want)
	}
	if f := lock.Fence(); f <= earlier {
		t.Errorf("Fence = %d, want more than every earlier holder's, %d", f, earlier)
	}
	for _, key := range keys {
		if v := holderOf(t, rdb, key); v != lock.Token() {
			t.Errorf("%s holds %q, want the Lock's token", key, v)
		}
		info, err := locker.Inspect(ctx, key)
		if err != nil {
			t.Fatal(err)
		}
		if !info.Held || info.Fingerprint != lock.Fingerprint() || info.Fence != lock.Fence() {
			t.Errorf("Inspect(%s) = held %v, fingerprint %q, fence %d; want the Lock's, %q and %d", key, info.Held, info.Fingerprint, info.Fence, lock.Fingerprint(), lock.Fence())
		}
		if info.Kind != "multi" || info.HolderName != plain.HolderName || !slices.Equal(info.Keys, slices.Sorted(slices.Values(keys))) {
			t.Errorf("Inspect(%s) = kind %q, holder name %q, keys %q; want \"multi\", a lock's, %q, and every key", key, info.Kind, info.HolderName, info.Keys, plain.HolderName)
		}
		if _, err := locker.TryObtain(ctx, key, time.Minute); !errors.Is(err, dlock.ErrNotObtained) {
			t.Errorf("TryObtain(%s) of a key the Lock holds = %v, want ErrNotObtained", key, err)
		}
	}
	if _, err := locker.TryObtainMulti(ctx, []string{keys[2], "other"}, time.Minute); !errors.Is(err, dlock.ErrNotObtained) {
		t.Errorf("TryObtainMulti of a held key and a free one = %v, want ErrNotObtained", err)
	}
	if ttl, err := lock.TTL(ctx); err != nil || ttl <= 0 || ttl > time.Minute {
		t.Errorf("TTL = %v, %v; want up to a minute", ttl, err)
	}
	if err := lock.Refresh(ctx, 2*time.Minute); err != nil {
		t.Errorf("Refresh: %v", err)
	}
	for _, key := range keys {
		if ttl := rdb.PTTL(ctx, key).Val(); ttl <= time.Minute {
			t.Errorf("PTTL(%s) after Refresh = %v, want over a minute", key, ttl)
		}
	}
	if err := lock.Release(ctx); err != nil {
		t.Fatalf("Release: %v", err)
	}
	if err := lock.Err(); !errors.Is(err, dlock.ErrReleased) {
		t.Errorf("Err = %v, want ErrReleased", err)
	}
	for _, key := range keys {
		if n := rdb.Exists(ctx, key).Val(); n != 0 {
			t.Errorf("%s exists after Release", key)
		}
	}
	if err := lock.Release(ctx); !errors.Is(err, dlock.ErrNotHeld) {
		t.Errorf("second Release = %v, want ErrNotHeld", err)
	}
	again, err := locker.TryObtainMulti(ctx, keys, time.Minute)
	if err != nil {
		t.Fatalf("TryObtainMulti after the Release: %v", err)
	}
	if again.Fence() <= lock.Fence() {
		t.Errorf("the next holder's fence %d is not above %d", again.Fence(), lock.Fence())
	}
	if err := again.ReleaseAfter(ctx, time.Minute); err != nil {
		t.Fatal(err)
	}
	if _, err := locker.TryObtain(ctx, keys[0], time.Minute); !errors.Is(err, dlock.ErrNotObtained) {
		t.Errorf("TryObtain after ReleaseAfter = %v, want ErrNotObtained: the keys are kept", err)
	}
}

// A key held by another, or of another type, fails the whole acquire, and
// leaves nothing of the caller's on the other keys.
func TestObtainMultiAllOrNothing(t *testing.T) {
	t.Parallel()
	ctx := testenv.Timeout(t, 20*time.Second)
	rdb := testenv.Client(t)
	locker := lockenv.Locker(t, rdb)
	keys := multiKeys(t, "a", "b", "c")

	mustRollBack(ctx, t, rdb, locker, keys, keys[1])
	mustRefuseWrongType(ctx, t, rdb, locker, keys, keys[2])
}

// mustRollBack holds blocked, one of keys, with another Lock, and checks
// that TryObtainMulti of keys fails with ErrNotObtained and leaves nothing
// of the caller's: the other keys free, blocked its holder's.
func mustRollBack(ctx context.Context, t *testing.T, rdb redis.Cmdable, locker *dlock.Client, keys []string, blocked string) {
	t.Helper()
	other := mustObtain(t, locker, blocked, time.Minute)
	if _, err := locker.TryObtainMulti(ctx, keys, time.Minute); !errors.Is(err, dlock.ErrNotObtained) {
		t.Fatalf("TryObtainMulti with %s held = %v, want ErrNotObtained", blocked, err)
	}
	mustBeFree(ctx, t, rdb, slices.DeleteFunc(slices.Clone(keys), func(k string) bool { return k == blocked })...)
	if v := tokenOf(rdb.Get(ctx, blocked).Val()); v != other.Token() {
		t.Errorf("the held key holds %q, want its holder's token", v)
	}
	if err := other.Release(ctx); err != nil {
		t.Fatal(err)
	}
}

// mustRefuseWrongType makes list, one of keys, a list, and checks that
// TryObtainMulti of keys fails with ErrWrongType and leaves the other keys
// free; it deletes the list after.
func mustRefuseWrongType(ctx context.Context, t *testing.T, rdb redis.Cmdable, locker *dlock.Client, keys []string, list string) {
	t.Helper()
	if err := rdb.LPush(ctx, list, "x").Err(); err != nil {
		t.Fatal(err)
	}
	if _, err := locker.TryObtainMulti(ctx, keys, time.Minute); !errors.Is(err, dlock.ErrWrongType) {
		t.Fatalf("TryObtainMulti with a list among the keys = %v, want ErrWrongType", err)
	}
	mustBeFree(ctx, t, rdb, slices.DeleteFunc(slices.Clone(keys), func(k string) bool { return k == list })...)
	rdb.Del(ctx, list)
}

// mustBeFree checks that none of keys exists: no Lock holds them.
func mustBeFree(ctx context.Context, t *testing.T, rdb redis.Cmdable, keys ...string) {
	t.Helper()
	for _, key := range keys {
		if n := rdb.Exists(ctx, key).Val(); n != 0 {
			t.Errorf("%s is held: %q", key, rdb.Get(ctx, key).Val())
		}
	}
}

// Bad input is an error, never a panic.
func TestObtainMultiBadInput(t *testing.T) {
	t.Parallel()
	ctx := testenv.Timeout(t, 20*time.Second)
	locker := lockenv.Locker(t, nil)
	many := make([]string, dlock.MaxMultiKeys+1)
	for i := range many {
		many[i] = testenv.Key(t) + string(rune('a'+i%26)) + string(rune('a'+i/26))
	}
	for _, c := range []struct {
		name string
		keys []string
		ttl  time.Duration
		opts []dlock.ObtainOption
		want error
	}{
		{"no keys", nil, time.Second, nil, dlock.ErrInvalidKey},
		{"empty key", []string{"a", ""}, time.Second, nil, dlock.ErrInvalidKey},
		{"too many keys", many, time.Second, nil, dlock.ErrInvalidKey},
		{"short ttl", []string{"a"}, time.Microsecond, nil, dlock.ErrInvalidTTL},
		{"fair", []string{"a", "b"}, time.Second, []dlock.ObtainOption{dlock.WithFair()}, dlock.ErrInvalidOption},
		{"record", []string{"a", "b"}, time.Second, []dlock.ObtainOption{dlock.AsRecord()}, dlock.ErrInvalidOption},
		{"nil option", []string{"a", "b"}, time.Second, []dlock.ObtainOption{nil}, dlock.ErrInvalidOption},
	} {
		if _, err := locker.TryObtainMulti(ctx, c.keys, c.ttl, c.opts...); !errors.Is(err, c.want) {
			t.Errorf("%s: TryObtainMulti = %v, want %v", c.name, err, c.want)
		}
		if _, err := locker.ObtainMulti(ctx, c.keys, c.ttl, c.opts...); !errors.Is(err, c.want) {
			t.Errorf("%s: ObtainMulti = %v, want %v", c.name, err, c.want)
		}
	}
	locker.Close()
	if _, err := locker.TryObtainMulti(ctx, []string{"a"}, time.Second); !errors.Is(err, dlock.ErrClosed) {
		t.Errorf("TryObtainMulti on a closed Client = %v, want ErrClosed", err)
	}
}

// Callers that name the same keys in opposite orders, waiting, each get
// both keys or neither, one at a time, and none waits forever; callers of
// one key take turns with them.
func TestObtainMultiOppositeOrders(t *testing.T) {
	t.Parallel()
	ctx := testenv.Timeout(t, 2*time.Minute)
	newLocker := func() *dlock.Client { return lockenv.Locker(t, nil) }
	contendInOppositeOrders(ctx, t, newLocker, multiKeys(t, "a", "b"), 10, 50)
}

// contendInOppositeOrders has callers goroutines, each on a Client of its
// own, take keys rounds times each, waiting: all of them in keys' order, all
// of them in the reverse order, or one of them alone, by turns. It fails the
// test if a key ever has two holders at once, or a call fails (as one that
// waits until ctx ends does).
func contendInOppositeOrders(ctx context.Context, t *testing.T, newLocker func() *dlock.Client, keys []string, callers, rounds int) {
	t.Helper()
	reversed := slices.Clone(keys)
	slices.Reverse(reversed)
	all := make([]int, len(keys))
	for i := range all {
		all[i] = i
	}
	inside := make([]atomic.Int32, len(keys))
	var wg sync.WaitGroup
	for g := range callers {
		locker := newLocker()
		wg.Go(func() {
			for range rounds {
				var lock *dlock.Lock
				var err error
				held := all
				switch g % 3 {
				case 0:
					lock, err = locker.ObtainMulti(ctx, keys, time.Minute)
				case 1:
					lock, err = locker.ObtainMulti(ctx, reversed, time.Minute)
				default:
					one := (g / 3) % len(keys)
					lock, err = locker.Obtain(ctx, keys[one], time.Minute)
					held = []int{one}
				}
				if err != nil {
					t.Errorf("obtain: %v", err)
					return
				}
				for _, i := range held {
					if n := inside[i].Add(1); n != 1 {
						t.Errorf("%d holders of %s at once", n, keys[i])
					}
				}
				for _, i := range held {
					inside[i].Add(-1)
				}
				if err := lock.Release(ctx); err != nil {
					t.Errorf("Release: %v", err)
					return
				}
			}
		})
	}
	wg.Wait()
}

// A waiter for several keys is woken by the release of the one held: its
// Backoff alone would not wake it before its context ends.
func TestObtainMultiWokenByRelease(t *testing.T) {
	t.Parallel()
	ctx := testenv.Timeout(t, 30*time.Second)
	rdb := testenv.Client(t)
	locker := lockenv.Locker(t, rdb)
	keys := multiKeys(t, "a", "b")
	mustWakeOnRelease(ctx, t, rdb, locker, keys, keys[1])
}

// mustWakeOnRelease holds held, one of keys, and checks that an ObtainMulti
// of keys whose Backoff would not wake it before ctx ends gets them once
// held is released: woken by the release.
func mustWakeOnRelease(ctx context.Context, t *testing.T, rdb redis.UniversalClient, locker *dlock.Client, keys []string, held string) {
	t.Helper()
	holder := mustObtain(t, locker, held, time.Hour)
	got := make(chan error, 1)
	go func() {
		lock, err := locker.ObtainMulti(ctx, keys, time.Minute, dlock.WithBackoff(dlock.ExponentialBackoff(time.Hour, time.Hour)))
		if err == nil {
			err = lock.Release(context.Background())
		}
		got <- err
	}()
	watch := "dlock:watch:" + held // its watch channel (see keys.go)
	testenv.Eventually(t, 20*time.Second, "the waiter listens", func() bool {
		return rdb.PubSubNumSub(ctx, watch).Val()[watch] > 0
	})
	if err := holder.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-got; err != nil {
		t.Fatalf("ObtainMulti after the release: %v", err)
	}
}

// A renewed multi-key Lock outlives its ttl; when someone deletes one of its
// keys, it is lost, and its other keys are let go.
func TestObtainMultiAutoRenewAndLost(t *testing.T) {
	t.Parallel()
	ctx := testenv.Timeout(t, 30*time.Second)
	rdb := testenv.Client(t)
	locker := lockenv.Locker(t, rdb)
	keys := multiKeys(t, "a", "b")
	mustRenewThenLose(ctx, t, rdb, locker, keys, keys[1])
	if _, err := locker.TryObtainMulti(ctx, keys, time.Minute); err != nil {
		t.Errorf("TryObtainMulti after the loss: %v", err)
	}
}

// mustRenewThenLose takes keys with auto-renew and a ttl of a second,
// checks that the Lock outlives its ttl with every key its own, deletes
// gone, one of keys, and checks that the Lock is lost then and its other
// keys let go.
func mustRenewThenLose(ctx context.Context, t *testing.T, rdb redis.Cmdable, locker *dlock.Client, keys []string, gone string) {
	t.Helper()
	const ttl = time.Second
	lock, err := locker.TryObtainMulti(ctx, keys, ttl, dlock.WithAutoRenew(true))
	if err != nil {
		t.Fatal(err)
	}
	first := lock.Until()
	testenv.Eventually(t, 20*time.Second, "a refresh", func() bool { return lock.Until().After(first.Add(ttl)) })
	select {
	case <-lock.Done():
		t.Fatalf("lost while renewed: %v", lock.Err())
	default:
	}
	for _, key := range keys {
		if v := rdb.Get(ctx, key).Val(); v != lock.Token() {
			t.Errorf("%s holds %q after the renewals, want the Lock's token", key, v)
		}
	}
	if err := rdb.Del(ctx, gone).Err(); err != nil {
		t.Fatal(err)
	}
	select {
	case <-lock.Done():
	case <-ctx.Done():
		t.Fatal("the Lock did not end after one of its keys was deleted")
	}
	if err := lock.Err(); !errors.Is(err, dlock.ErrLockLost) {
		t.Errorf("Err = %v, want ErrLockLost", err)
	}
	mustBeFree(ctx, t, rdb, keys...)
}

// On a Cluster of three primaries, keys of one slot are taken in one
// script, on the primary of their slot, and renewed there; keys of several
// slots are taken too (see multi_slots_test.go). When the primary of
// a renewed Lock's slot dies (no replica takes over), the Lock is lost.
func TestObtainMultiCluster(t *testing.T) {
	t.Parallel()
	ctx := testenv.Timeout(t, 30*time.Second)
	cluster := redistest.NewCluster(t, 3, 0)
	rdb := cluster.Client()
	locker := lockenv.Locker(t, rdb)
	var renewed []*dlock.Lock
	for _, tag := range []string{"{acct}", "{user:7}", "{x}"} {
		keys := []string{tag + ":b", tag + ":a", tag + ":c"}
		lock, err := locker.TryObtainMulti(ctx, keys, 2*time.Second, dlock.WithAutoRenew(true))
		if err != nil {
			t.Fatalf("TryObtainMulti of keys of one slot: %v", err)
		}
		for _, key := range keys {
			if v := tokenOf(rdb.Get(ctx, key).Val()); v != lock.Token() {
				t.Errorf("%s holds %q, want the Lock's token", key, v)
			}
		}
		if lock.Fence() <= 0 {
			t.Errorf("Fence = %d", lock.Fence())
		}
		if _, err := locker.TryObtain(ctx, keys[2], time.Minute); !errors.Is(err, dlock.ErrNotObtained) {
			t.Errorf("TryObtain of a key of the Lock = %v, want ErrNotObtained", err)
		}
		renewed = append(renewed, lock)
	}
	first := renewed[0].Until()
	testenv.Eventually(t, 20*time.Second, "a renewal", func() bool { return renewed[0].Until().After(first) })
	if err := renewed[1].Release(ctx); err != nil {
		t.Errorf("Release: %v", err)
	}
	twoSlots, err := locker.TryObtainMulti(ctx, []string{"order:1", "order:2"}, time.Minute)
	if err != nil {
		t.Errorf("TryObtainMulti of keys of two slots: %v", err)
	} else if err := twoSlots.Release(ctx); err != nil {
		t.Errorf("Release of keys of two slots: %v", err)
	}

	cluster.PrimaryOf("{x}:a").Kill()
	select {
	case <-renewed[2].Done():
	case <-ctx.Done():
		t.Fatal("the Lock on a dead primary did not end")
	}
	if err := renewed[2].Err(); !errors.Is(err, dlock.ErrLockLost) {
		t.Errorf("Err = %v, want ErrLockLost", err)
	}
}

// On a Redlock, every node takes all the keys or none; the quorum's fence
// is above every earlier holder's of each key, and Release frees every
// node.
func TestObtainMultiRedlock(t *testing.T) {
	t.Parallel()
	ctx := testenv.Timeout(t, 20*time.Second)
	e := setupQuorum(t, 3)
	keys := []string{"x", "y"}
	var earlier int64
	for _, key := range keys {
		lock, err := e.locker.TryObtain(ctx, key, time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		earlier = max(earlier, lock.Fence())
		if err := lock.Release(ctx); err != nil {
			t.Fatal(err)
		}
	}
	// A Redlock release returns once a quorum released; the last node's
	// answer may still be on its way.
	freed := func(keys ...string) {
		t.Helper()
		testenv.Eventually(t, 10*time.Second, "the release on every node", func() bool {
			for _, rdb := range e.rdbs {
				if rdb.Exists(ctx, keys...).Val() != 0 {
					return false
				}
			}
			return true
		})
	}
	freed(keys...)
	// y is held on one node by another: a quorum still grants both keys.
	if err := e.rdbs[0].Set(ctx, "y", "other", time.Minute).Err(); err != nil {
		t.Fatal(err)
	}
	lock, err := e.locker.TryObtainMulti(ctx, keys, time.Minute)
	if err != nil {
		t.Fatalf("TryObtainMulti on a quorum: %v", err)
	}
	if got := e.holders("x", lock.Token()); got != 2 {
		t.Errorf("x is ours on %d nodes, want 2: node 0 took it back, as it could not take y", got)
	}
	if f := lock.Fence(); f <= earlier {
		t.Errorf("Fence = %d, want above %d", f, earlier)
	}
	if info, err := e.locker.Inspect(ctx, "x"); err != nil || info.Kind != "multi" || !slices.Equal(info.Keys, keys) {
		t.Errorf("Inspect(x) on a quorum = kind %q, keys %q, %v; want \"multi\" and %q", info.Kind, info.Keys, err, keys)
	}
	if _, err := e.locker.TryObtainMulti(ctx, []string{"y", "z"}, time.Minute); !errors.Is(err, dlock.ErrNotObtained) {
		t.Errorf("TryObtainMulti of a held key = %v, want ErrNotObtained", err)
	}
	if err := lock.Release(ctx); err != nil {
		t.Fatalf("Release: %v", err)
	}
	freed("x") // y is still the other holder's on node 0
	for _, key := range keys {
		if n := e.holders(key, lock.Token()); n != 0 {
			t.Errorf("%s is ours on %d nodes after Release", key, n)
		}
	}
	if _, err := e.locker.TryObtainMulti(ctx, []string{"z", "x"}, time.Minute); err != nil {
		t.Errorf("TryObtainMulti after the Release: %v", err)
	}

	// w is held by another on two nodes of three: no quorum, and the node
	// that granted v and w gives them back.
	for _, rdb := range e.rdbs[1:] {
		if err := rdb.Set(ctx, "w", "other", time.Minute).Err(); err != nil {
			t.Fatal(err)
		}
	}
	failed, err := e.locker.TryObtainMulti(ctx, []string{"w", "v"}, time.Minute)
	if !errors.Is(err, dlock.ErrNotObtained) {
		t.Fatalf("TryObtainMulti with w held on a majority = %v, %v; want ErrNotObtained", failed, err)
	}
	// A node that had not answered when the round was decided is taken
	// back in the background, once it answers.
	testenv.Eventually(t, 10*time.Second, "the attempt taken back on every node", func() bool {
		for _, rdb := range e.rdbs {
			if rdb.Exists(ctx, "v").Val() != 0 {
				return false
			}
		}
		return e.rdbs[0].Exists(ctx, "w").Val() == 0
	})
}

// go-redis (default options) sends the acquire again when Redis does not
// answer within ReadTimeout; every copy runs once it does. The Lock holds
// every key, and the copies answer as the first did.
func TestObtainMultiResentByTheRedisClient(t *testing.T) {
	t.Parallel()
	srv, rdb, locker := resendEnv(t)
	keys := multiKeys(t, "a", "b")
	before := testenv.EvalshaCalls(t, rdb)

	srv.Pause()
	obtained := make(chan *dlock.Lock, 1)
	go func() {
		lock, err := locker.TryObtainMulti(context.Background(), keys, time.Minute)
		if err != nil {
			t.Errorf("TryObtainMulti resent: %v, want the Lock", err)
		}
		obtained <- lock
	}()
	time.Sleep(testenv.ResendPause)
	srv.Resume()
	lock := <-obtained
	if lock == nil {
		return
	}
	if n := testenv.EvalshaCalls(t, rdb) - before; n < 2 {
		t.Errorf("Redis ran %d EVALSHA, want the acquire's copies: go-redis did not send it again", n)
	}
	for _, key := range keys {
		if v := holderOf(t, rdb, key); v != lock.Token() {
			t.Errorf("%s holds %q, want the Lock's token", key, v)
		}
	}
	if err := lock.Release(context.Background()); err != nil {
		t.Errorf("Release: %v", err)
	}
}

// go-redis (default options) sends the release again, and another client
// takes one of the keys between the copies: Release says it released the
// keys, and leaves the other's key alone.
func TestObtainMultiReleaseResentByTheRedisClient(t *testing.T) {
	t.Parallel()
	srv, rdb, locker := resendEnv(t)
	other := srv.Client(func(o *redis.Options) { o.ReadTimeout, o.MaxRetries = 30*time.Second, -1 })
	keys := multiKeys(t, "a", "b")
	lock, err := locker.TryObtainMulti(context.Background(), keys, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	before := testenv.EvalshaCalls(t, rdb)

	srv.Pause()
	released := make(chan error, 1)
	go func() { released <- lock.Release(context.Background()) }()
	time.Sleep(time.Second) // the first copy is on its way
	taken := make(chan bool, 1)
	go func() { taken <- other.SetNX(context.Background(), keys[0], "other", time.Minute).Val() }()
	time.Sleep(testenv.ResendPause - time.Second) // past ReadTimeout: go-redis sends the release again
	srv.Resume()
	if err := <-released; err != nil {
		t.Errorf("Release = %v, want nil: it released the keys", err)
	}
	if err := lock.Err(); !errors.Is(err, dlock.ErrReleased) {
		t.Errorf("Err = %v, want ErrReleased", err)
	}
	if n := testenv.EvalshaCalls(t, rdb) - before; n < 2 {
		t.Errorf("Redis ran %d EVALSHA, want the release's copies: go-redis did not send it again", n)
	}
	if !<-taken || value(t, rdb, keys[0]) != "other" {
		t.Errorf("the other client's key was not kept")
	}
	if n := rdb.Exists(context.Background(), keys[1]).Val(); n != 0 {
		t.Errorf("%s is still there after the Release", keys[1])
	}
}

// resendEnv is a redis-server of the test, a client with go-redis's
// default options (MaxRetries 3, ReadTimeout 5 s) with warm connections,
// and a Client on it whose multi-key scripts are loaded: a copy of
// EVALSHA does not fail with NOSCRIPT.
func resendEnv(t *testing.T) (*redistest.Server, *redis.Client, *dlock.Client) {
	t.Helper()
	srv := redistest.NewServer(t)
	rdb := srv.Client()
	testenv.WarmPool(t, rdb, 4)
	locker := lockenv.Locker(t, rdb)
	warm, err := locker.TryObtainMulti(context.Background(), multiKeys(t, "warm"), time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if err := warm.Release(context.Background()); err != nil {
		t.Fatal(err)
	}
	return srv, rdb, locker
}

// An observer is told of a multi-key Lock as of any: of kind "multi",
// named by the first of its sorted keys, from obtain to release.
func TestObtainMultiObserved(t *testing.T) {
	t.Parallel()
	ctx := testenv.Timeout(t, 20*time.Second)
	var mu sync.Mutex
	var seen []observe.Event
	locker := lockenv.Locker(t, nil, dlock.WithObserver(observe.ObserverFunc(func(e observe.Event) {
		mu.Lock()
		defer mu.Unlock()
		seen = append(seen, e)
	})))
	keys := multiKeys(t, "b", "a")
	lock, err := locker.ObtainMulti(ctx, keys, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if err := lock.Release(ctx); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	var types []observe.EventType
	for _, e := range seen {
		types = append(types, e.Type)
		if e.Kind != "multi" || e.Key != keys[1] {
			t.Errorf("event %v of kind %q, key %q; want \"multi\" and %q", e.Type, e.Kind, e.Key, keys[1])
		}
	}
	if len(types) < 2 || types[0] != observe.EventObtain || types[len(types)-1] != observe.EventRelease {
		t.Errorf("events %v, want an obtain, then a release", types)
	}
}

// An acquire whose caller gave up while Redis was paused is taken back
// once Redis answers: nothing of it is left on any key.
func TestObtainMultiGivenUpIsTakenBack(t *testing.T) {
	t.Parallel()
	srv := redistest.NewServer(t)
	rdb := srv.Client()
	locker := dlock.New(rdb)
	t.Cleanup(func() { locker.Close() })
	keys := multiKeys(t, "a", "b")
	warm, err := locker.TryObtainMulti(context.Background(), multiKeys(t, "warm"), time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if err := warm.Release(context.Background()); err != nil {
		t.Fatal(err)
	}
	srv.Pause()
	_, err = locker.TryObtainMulti(testenv.Timeout(t, 200*time.Millisecond), keys, time.Minute)
	srv.Resume()
	if !errors.Is(err, dlock.ErrOutcomeUnknown) {
		t.Fatalf("TryObtainMulti while Redis is paused = %v, want ErrOutcomeUnknown", err)
	}
	locker.Close() // waits for the take-back in the background
	if n := rdb.Exists(context.Background(), keys...).Val(); n != 0 {
		t.Errorf("%d of the keys are left after the take-back", n)
	}
}

// On a Redlock, a waiter for several keys is woken by the release of the
// one held.
func TestObtainMultiRedlockWokenByRelease(t *testing.T) {
	t.Parallel()
	ctx := testenv.Timeout(t, 30*time.Second)
	e := setupQuorum(t, 3)
	holder, err := e.locker.TryObtain(ctx, "b", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan error, 1)
	go func() {
		lock, err := e.locker.ObtainMulti(ctx, []string{"a", "b"}, time.Minute, dlock.WithBackoff(dlock.ExponentialBackoff(time.Hour, time.Hour)))
		if err == nil {
			err = lock.Release(context.Background())
		}
		got <- err
	}()
	const watch = "dlock:watch{b}"
	testenv.Eventually(t, 20*time.Second, "the waiter listens on every node", func() bool {
		for _, rdb := range e.rdbs {
			if rdb.PubSubNumSub(ctx, watch).Val()[watch] == 0 {
				return false
			}
		}
		return true
	})
	if err := holder.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-got; err != nil {
		t.Fatalf("ObtainMulti after the release: %v", err)
	}
}
