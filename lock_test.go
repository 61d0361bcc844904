package dlock_test

import (
	"context"
	"errors"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dlock-go/dlock"
	"github.com/dlock-go/dlock/internal/testenv"
	"github.com/dlock-go/dlock/internal/testenv/lockenv"
)

func TestObtainAndRelease(t *testing.T) {
	t.Parallel()
	e := setup(t)
	ctx := context.Background()
	key := testenv.Key(t)

	before := time.Now()
	lock, err := e.locker.Obtain(ctx, key, 10*time.Second)
	if err != nil {
		t.Fatalf("Obtain: %v", err)
	}
	if lock.Key() != key {
		t.Errorf("Key() = %q, want %q", lock.Key(), key)
	}
	if !regexp.MustCompile(`^[A-Za-z0-9_-]{22}~`).MatchString(lock.Token()) {
		t.Errorf("Token() = %q, want 22 characters of base64 (128 bits), then the holder's name", lock.Token())
	}
	if got := holderOf(t, e.rdb, key); got != lock.Token() {
		t.Errorf("key holds %q, want the token %q", got, lock.Token())
	}
	if lock.Fence() <= 0 {
		t.Errorf("Fence() = %d, want > 0", lock.Fence())
	}
	// Until = sent + ttl - (ttl/100 + 2ms).
	if u := lock.Until(); u.Before(before.Add(9*time.Second)) || u.After(time.Now().Add(10*time.Second)) {
		t.Errorf("Until() = %v, want about 9.9s after %v", u, before)
	}
	pttl := e.rdb.PTTL(ctx, key).Val()
	if pttl <= 9*time.Second || pttl > 10*time.Second {
		t.Errorf("PTTL = %v, want just under 10s", pttl)
	}

	if err := lock.Release(ctx); err != nil {
		t.Fatalf("Release: %v", err)
	}
	if n := e.rdb.Exists(ctx, key).Val(); n != 0 {
		t.Errorf("key still exists after Release")
	}
	if err := lock.Release(ctx); !errors.Is(err, dlock.ErrNotHeld) {
		t.Errorf("second Release = %v, want ErrNotHeld", err)
	}
}

func TestTryObtainWhenHeld(t *testing.T) {
	t.Parallel()
	e := setup(t)
	ctx := context.Background()
	key := testenv.Key(t)
	other := lockenv.Locker(t, e.rdb)

	first := mustObtain(t, e.locker, key, time.Minute)
	lock, err := other.TryObtain(ctx, key, time.Minute)
	if !errors.Is(err, dlock.ErrNotObtained) || lock != nil {
		t.Fatalf("TryObtain of a held lock = %v, %v; want nil, ErrNotObtained", lock, err)
	}
	if err := first.Release(ctx); err != nil {
		t.Fatalf("Release: %v", err)
	}
	second := mustObtain(t, other, key, time.Minute)
	if second.Fence() <= first.Fence() {
		t.Errorf("fence went from %d to %d, want it to grow", first.Fence(), second.Fence())
	}
}

func TestObtainWaitsForRelease(t *testing.T) {
	t.Parallel()
	e := setup(t)
	key := testenv.Key(t)
	first := mustObtain(t, e.locker, key, time.Minute)

	got := make(chan error, 1)
	go func() {
		lock, err := lockenv.Locker(t, e.rdb).Obtain(testenv.Timeout(t, 10*time.Second), key, time.Minute)
		if err == nil && lock.Fence() <= first.Fence() {
			err = errors.New("fence did not grow")
		}
		got <- err
	}()
	select {
	case err := <-got:
		t.Fatalf("Obtain returned %v while the lock was held", err)
	case <-time.After(100 * time.Millisecond):
	}
	if err := first.Release(context.Background()); err != nil {
		t.Fatalf("Release: %v", err)
	}
	if err := <-got; err != nil {
		t.Fatalf("waiting Obtain: %v", err)
	}
}

func TestObtainAfterHolderExpires(t *testing.T) {
	t.Parallel()
	e := setup(t)
	key := testenv.Key(t)
	// A holder that crashed: it never releases.
	mustObtain(t, e.locker, key, 200*time.Millisecond)

	lock, err := e.locker.Obtain(testenv.Timeout(t, 10*time.Second), key, time.Minute)
	if err != nil {
		t.Fatalf("Obtain after the holder's ttl: %v", err)
	}
	if got := holderOf(t, e.rdb, key); got != lock.Token() {
		t.Errorf("key holds %q, want the new token", got)
	}
}

// The classic bug of hand-written locks: a holder whose lock expired
// finishes its work and deletes the key, which by then is the next holder's
// lock. Here the old holder's release must touch nothing.
func TestExpiredHolderCannotTouchNextHolder(t *testing.T) {
	t.Parallel()
	e := setup(t)
	ctx := context.Background()
	key := testenv.Key(t)

	old := mustObtain(t, e.locker, key, 50*time.Millisecond)
	time.Sleep(100 * time.Millisecond) // a pause longer than the ttl
	next, err := lockenv.Locker(t, e.rdb).Obtain(testenv.Timeout(t, 5*time.Second), key, time.Minute)
	if err != nil {
		t.Fatalf("next holder's Obtain: %v", err)
	}

	if err := old.Refresh(ctx, time.Minute); !errors.Is(err, dlock.ErrNotHeld) {
		t.Errorf("old holder's Refresh = %v, want ErrNotHeld", err)
	}
	if _, err := old.TTL(ctx); !errors.Is(err, dlock.ErrNotHeld) {
		t.Errorf("old holder's TTL = %v, want ErrNotHeld", err)
	}
	if err := old.Release(ctx); !errors.Is(err, dlock.ErrNotHeld) {
		t.Errorf("old holder's Release = %v, want ErrNotHeld", err)
	}
	if got := holderOf(t, e.rdb, key); got != next.Token() {
		t.Fatalf("key holds %q after the old holder's calls, want the next holder's token", got)
	}
	if ttl, err := next.TTL(ctx); err != nil || ttl < 59*time.Second {
		t.Errorf("next holder's TTL = %v, %v; want about a minute", ttl, err)
	}
	if next.Fence() <= old.Fence() {
		t.Errorf("next fence %d <= old fence %d", next.Fence(), old.Fence())
	}
	if err := next.Release(ctx); err != nil {
		t.Errorf("next holder's Release: %v", err)
	}
}

func TestRefresh(t *testing.T) {
	t.Parallel()
	e := setup(t)
	ctx := context.Background()
	lock := mustObtain(t, e.locker, testenv.Key(t), 100*time.Millisecond)
	until := lock.Until()

	if err := lock.Refresh(ctx, time.Minute); err != nil {
		t.Fatalf("Refresh: %v", err)
	}
	if !lock.Until().After(until.Add(50 * time.Second)) {
		t.Errorf("Until went from %v to %v, want about a minute later", until, lock.Until())
	}
	time.Sleep(200 * time.Millisecond) // past the first ttl
	ttl, err := lock.TTL(ctx)
	if err != nil || ttl < 59*time.Second {
		t.Errorf("TTL after Refresh = %v, %v; want about a minute", ttl, err)
	}
	if err := lock.Refresh(ctx, 0); !errors.Is(err, dlock.ErrInvalidTTL) {
		t.Errorf("Refresh(0) = %v, want ErrInvalidTTL", err)
	}
	if err := lock.Release(ctx); err != nil {
		t.Fatalf("Release: %v", err)
	}
	if err := lock.Refresh(ctx, time.Minute); !errors.Is(err, dlock.ErrNotHeld) {
		t.Errorf("Refresh after Release = %v, want ErrNotHeld", err)
	}
}

func TestTTL(t *testing.T) {
	t.Parallel()
	e := setup(t)
	ctx := context.Background()
	key := testenv.Key(t)
	lock := mustObtain(t, e.locker, key, 10*time.Second)

	ttl, err := lock.TTL(ctx)
	if err != nil || ttl <= 9*time.Second || ttl > 10*time.Second {
		t.Errorf("TTL = %v, %v; want just under 10s", ttl, err)
	}
	e.rdb.Persist(ctx, key)
	if ttl, err := lock.TTL(ctx); err != nil || ttl != -1 {
		t.Errorf("TTL of a persisted key = %v, %v; want -1", ttl, err)
	}
	e.rdb.Del(ctx, key)
	if _, err := lock.TTL(ctx); !errors.Is(err, dlock.ErrNotHeld) {
		t.Errorf("TTL of a deleted lock = %v, want ErrNotHeld", err)
	}
}

func TestFenceGrowsAcrossHoldersExpiryAndRestart(t *testing.T) {
	t.Parallel()
	e := setup(t)
	ctx := context.Background()
	key := testenv.Key(t)
	lockers := []*dlock.Client{e.locker, lockenv.Locker(t, e.rdb), lockenv.Locker(t, e.rdb)}

	var last int64
	check := func(step string, lock *dlock.Lock) {
		t.Helper()
		if lock.Fence() <= last {
			t.Fatalf("%s: fence %d, want > %d", step, lock.Fence(), last)
		}
		last = lock.Fence()
	}
	for i := range 30 { // alternating holders, released at once
		lock := mustObtain(t, lockers[i%len(lockers)], key, time.Minute)
		if i%4 != 3 { // and every fourth asks for no fence
			check("release", lock)
		}
		if err := lock.Release(ctx); err != nil {
			t.Fatal(err)
		}
	}
	for range 3 { // holders whose lock expired, fence key with it
		check("expiry", mustObtain(t, e.locker, key, 200*time.Millisecond))
		testenv.Eventually(t, time.Minute, "the lock and its fence key expired", func() bool {
			return e.rdb.Exists(ctx, key, "dlock:fence{"+key+"}").Val() == 0
		})
	}
	check("before restart", mustObtain(t, e.locker, key, time.Minute))
	e.srv.Restart() // no persistence: every key, fence and script is gone
	check("after restart", mustObtain(t, e.locker, key, time.Minute))
}

// A holder that lost its lock before it asked for its fence gets 0, which
// a resource that checks fences refuses; the next holder gets a fence.
func TestFenceOfALostLock(t *testing.T) {
	t.Parallel()
	e := setup(t)
	ctx := context.Background()
	key := testenv.Key(t)
	lost := mustObtain(t, e.locker, key, time.Minute)
	if err := e.rdb.Del(ctx, key).Err(); err != nil { // as if it expired
		t.Fatal(err)
	}
	next := mustObtain(t, e.locker, key, time.Minute)
	if f := lost.Fence(); f != 0 {
		t.Errorf("the lost lock's first Fence = %d, want 0", f)
	}
	if next.Fence() <= 0 || lost.Fence() != 0 {
		t.Errorf("fences %d (next) and %d (lost, again), want > 0 and 0", next.Fence(), lost.Fence())
	}
	if v := e.rdb.Get(ctx, "dlock:fence{"+key+"}").Val(); !strings.HasPrefix(v, strconv.FormatInt(next.Fence(), 10)+":") {
		t.Errorf("the fence key holds %q, want the next holder's fence %d", v, next.Fence())
	}
}

// Many goroutines on one Lock: exactly one Release wins, and the race
// detector sees no unsynchronised access.
func TestLockConcurrentUse(t *testing.T) {
	t.Parallel()
	e := setup(t)
	ctx := context.Background()
	lock := mustObtain(t, e.locker, testenv.Key(t), time.Minute)

	var wg sync.WaitGroup
	var mu sync.Mutex
	released := 0
	for range 8 {
		wg.Go(func() {
			_, _ = lock.TTL(ctx)
			_ = lock.Refresh(ctx, time.Minute)
			_ = lock.Until()
			err := lock.Release(ctx)
			if err != nil && !errors.Is(err, dlock.ErrNotHeld) {
				t.Errorf("Release: %v", err)
			}
			if err == nil {
				mu.Lock()
				released++
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if released != 1 {
		t.Errorf("%d Release calls succeeded, want exactly 1", released)
	}
}
