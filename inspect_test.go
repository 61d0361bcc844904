package dlock_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/dlock-go/dlock"
	"github.com/dlock-go/dlock/internal/testenv"
	"github.com/dlock-go/dlock/internal/testenv/lockenv"
)

func TestInspect(t *testing.T) {
	t.Parallel()
	e := setup(t)
	ctx := context.Background()
	key := testenv.Key(t)

	info, err := e.locker.Inspect(ctx, key)
	if err != nil || info.Held || info.TTL != 0 || info.Fence != 0 || info.Fingerprint != "" || info.Key != key {
		t.Errorf("Inspect of a free key = %+v, %v", info, err)
	}
	before := time.Now()
	lock := mustObtain(t, e.locker, key, time.Minute)
	info, err = e.locker.Inspect(ctx, key)
	if err != nil || !info.Held || info.Fingerprint != lock.Fingerprint() || info.Fence != 0 ||
		info.TTL <= 59*time.Second || info.TTL > time.Minute || info.Since.Before(before.Add(-time.Minute)) {
		t.Errorf("Inspect of a held lock = %+v, %v; want held, its fingerprint, no fence yet, since the acquire, ttl about 1m", info, err)
	}
	if lock.Fence() <= 0 {
		t.Fatalf("Fence = %d", lock.Fence())
	}
	info, err = e.locker.Inspect(ctx, key)
	if err != nil || !info.Held || info.Fence != lock.Fence() || info.Since.After(time.UnixMicro(lock.Fence())) {
		t.Errorf("Inspect after Fence = %+v, %v; want fence %d, since no later than it", info, err, lock.Fence())
	}
	e.rdb.Persist(ctx, key)
	if info, _ := e.locker.Inspect(ctx, key); info.TTL != -1 {
		t.Errorf("Inspect of a persisted lock: TTL %v, want -1", info.TTL)
	}
	if err := lock.Release(ctx); err != nil {
		t.Fatal(err)
	}
	info, err = e.locker.Inspect(ctx, key)
	if err != nil || info.Held || info.Fence != lock.Fence() {
		t.Errorf("Inspect after Release = %+v, %v; want free, last fence %d", info, err, lock.Fence())
	}

	e.rdb.Set(ctx, key+":plain", "their-token", time.Minute) // another client's lock
	if info, err := e.locker.Inspect(ctx, key+":plain"); err != nil || !info.Held || info.Fingerprint != sha256Prefix("their-token") || info.Fence != 0 {
		t.Errorf("Inspect of a plain SET NX lock = %+v, %v", info, err)
	}
	e.rdb.HSet(ctx, key+":hash", "f", "v")
	if _, err := e.locker.Inspect(ctx, key+":hash"); !errors.Is(err, dlock.ErrWrongType) {
		t.Errorf("Inspect of a hash = %v, want ErrWrongType", err)
	}
	if _, err := e.locker.Inspect(ctx, ""); !errors.Is(err, dlock.ErrInvalidKey) {
		t.Errorf("Inspect of an empty key = %v, want ErrInvalidKey", err)
	}
}

// A fingerprint tells holders apart and shows nothing of the token: it is
// the start of the token's SHA-256, and Inspect, Scan and the holder agree
// on it.
func TestFingerprint(t *testing.T) {
	t.Parallel()
	e := setup(t)
	ctx := context.Background()
	key := testenv.Key(t)
	seen := map[string]bool{}
	for range 3 {
		lock := mustObtain(t, e.locker, key, time.Minute)
		fp := lock.Fingerprint()
		if fp != sha256Prefix(lock.Token()) || strings.Contains(lock.Token(), fp) || seen[fp] {
			t.Errorf("Fingerprint() = %q for token %q, want a new one: the first 8 hex digits of its SHA-256", fp, lock.Token())
		}
		seen[fp] = true
		info, err := e.locker.Inspect(ctx, key)
		if err != nil || info.Fingerprint != fp || strings.Contains(fmt.Sprintf("%+v", info), lock.Token()) {
			t.Errorf("Inspect = %+v, %v; want the holder's fingerprint %q and never its token", info, err, fp)
		}
		for info, err := range e.locker.Scan(ctx, key) {
			if err != nil || info.Fingerprint != fp {
				t.Errorf("Scan yielded %+v, %v; want the holder's fingerprint %q", info, err, fp)
			}
		}
		if err := lock.Release(ctx); err != nil {
			t.Fatal(err)
		}
	}
}

// sha256Prefix is the fingerprint of token, as the documentation says.
func sha256Prefix(token string) string {
	sum := sha256.Sum256([]byte(token))
	return hex.EncodeToString(sum[:])[:8]
}

func TestForceRelease(t *testing.T) {
	t.Parallel()
	e := setup(t)
	ctx := context.Background()
	key := testenv.Key(t)
	holder := mustObtain(t, e.locker, key, time.Minute)

	waiter := make(chan error, 1)
	go func() {
		_, err := lockenv.Locker(t, e.rdb).Obtain(testenv.Timeout(t, 10*time.Second), key, time.Minute)
		waiter <- err
	}()
	time.Sleep(50 * time.Millisecond)
	if deleted, err := e.locker.ForceRelease(ctx, key); err != nil || !deleted {
		t.Fatalf("ForceRelease of a held lock = %v, %v; want true", deleted, err)
	}
	if err := <-waiter; err != nil {
		t.Errorf("waiter after ForceRelease: %v", err)
	}
	if err := holder.Release(ctx); !errors.Is(err, dlock.ErrNotHeld) {
		t.Errorf("the old holder's Release = %v, want ErrNotHeld", err)
	}
	if deleted, err := e.locker.ForceRelease(ctx, key+":free"); err != nil || deleted {
		t.Errorf("ForceRelease of a free key = %v, %v; want false", deleted, err)
	}
	e.rdb.HSet(ctx, key+":hash", "f", "v")
	if _, err := e.locker.ForceRelease(ctx, key+":hash"); !errors.Is(err, dlock.ErrWrongType) {
		t.Errorf("ForceRelease of a hash = %v, want ErrWrongType", err)
	}
	if n := e.rdb.Exists(ctx, key+":hash").Val(); n != 1 {
		t.Error("ForceRelease deleted a hash")
	}
	if _, err := e.locker.ForceRelease(ctx, ""); !errors.Is(err, dlock.ErrInvalidKey) {
		t.Errorf("ForceRelease of an empty key = %v, want ErrInvalidKey", err)
	}
}

// scanned returns the keys Scan yields, sorted.
func scanned(t *testing.T, locker *dlock.Client, pattern string) []string {
	t.Helper()
	var keys []string
	for info, err := range locker.Scan(testenv.Timeout(t, 10*time.Second), pattern) {
		if err != nil {
			t.Fatalf("Scan(%q): %v", pattern, err)
		}
		if !info.Held || info.Fingerprint == "" {
			t.Errorf("Scan yielded %+v, want a held lock with a fingerprint", info)
		}
		keys = append(keys, info.Key)
	}
	slices.Sort(keys)
	return keys
}

func TestScan(t *testing.T) {
	t.Parallel()
	e := setup(t)
	ctx := context.Background()
	held := []string{"job:a", "job:b", "{user:1}:cart", "a}b", "订单:7", "\x00bin"}
	for _, key := range held {
		mustObtain(t, e.locker, key, time.Minute)
	}
	released := mustObtain(t, e.locker, "job:released", time.Minute)
	if err := released.Release(ctx); err != nil {
		t.Fatal(err)
	}
	refreshed := mustObtain(t, e.locker, "job:refreshed", 200*time.Millisecond)
	if err := refreshed.Refresh(ctx, time.Minute); err != nil {
		t.Fatal(err)
	}
	e.rdb.Set(ctx, "job:plain", "x", time.Minute) // not dlock's: not listed
	for i := range 1200 {                         // more than one SCAN page
		e.rdb.Set(ctx, "filler:"+string(rune('a'+i%26))+time.Duration(i).String(), "x", time.Minute)
	}
	time.Sleep(300 * time.Millisecond) // past the refreshed lock's first ttl

	want := append(slices.Clone(held), "job:refreshed")
	slices.Sort(want)
	if got := scanned(t, e.locker, "*"); !slices.Equal(got, want) {
		t.Errorf("Scan(*) = %q, want %q", got, want)
	}
	if got, want := scanned(t, e.locker, "job:*"), []string{"job:a", "job:b", "job:refreshed"}; !slices.Equal(got, want) {
		t.Errorf("Scan(job:*) = %q, want %q", got, want)
	}
	if got := scanned(t, e.locker, "nothing:*"); len(got) != 0 {
		t.Errorf("Scan(nothing:*) = %q, want none", got)
	}
	n := 0
	for range e.locker.Scan(ctx, "*") {
		n++
		break
	}
	if n != 1 {
		t.Errorf("breaking out of Scan after one lock gave %d", n)
	}
}

func TestScanCluster(t *testing.T) {
	t.Parallel()
	locker := lockenv.Locker(t, newCluster(t))
	for _, key := range []string{"job:x", "{t}y", "a}b"} {
		mustObtain(t, locker, key, time.Minute)
	}
	if got, want := scanned(t, locker, "*"), []string{"a}b", "job:x", "{t}y"}; !slices.Equal(got, want) {
		t.Errorf("Scan on a cluster = %q, want %q", got, want)
	}
}

func TestInspectAndScanOnAPausedRedis(t *testing.T) {
	t.Parallel()
	e := setup(t)
	mustObtain(t, e.locker, testenv.Key(t), time.Minute)
	e.srv.Pause()
	defer e.srv.Resume()
	within(t, time.Second, "Inspect, ForceRelease and Scan with 100ms deadlines", func() {
		if _, err := e.locker.Inspect(testenv.Timeout(t, 100*time.Millisecond), testenv.Key(t)); !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("Inspect = %v, want DeadlineExceeded", err)
		}
		if _, err := e.locker.ForceRelease(testenv.Timeout(t, 100*time.Millisecond), testenv.Key(t)); !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("ForceRelease = %v, want DeadlineExceeded", err)
		}
		for _, err := range e.locker.Scan(testenv.Timeout(t, 100*time.Millisecond), "*") {
			if !errors.Is(err, context.DeadlineExceeded) {
				t.Errorf("Scan = %v, want DeadlineExceeded", err)
			}
		}
	})
}
