package dlock_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dlock-go/dlock"
	"github.com/dlock-go/dlock/internal/testenv"
	"github.com/dlock-go/dlock/internal/testenv/lockenv"
)

// values that the scripts' separators must not confuse: colons (queue
// members, release messages), percent signs (the escape), dots (the
// value's own separator), and bytes of every kind.
var awkwardValues = []string{"", "host-1", "a:b:c", "100%", "%3A", "1.2.3.4:6379", "naïve ☃", "\x00\xff", strings.Repeat("v", dlock.MaxValueLen)}

func TestWithValue(t *testing.T) {
	t.Parallel()
	e := setup(t)
	ctx := t.Context()
	for i, v := range awkwardValues {
		key := testenv.Key(t) + ":" + string(rune('a'+i))
		lock, err := e.locker.TryObtain(ctx, key, time.Minute, dlock.WithValue(v))
		if err != nil {
			t.Fatalf("TryObtain WithValue(%q): %v", v, err)
		}
		if got := lock.Value(); got != v {
			t.Errorf("Lock.Value() = %q, want %q", got, v)
		}
		if holderOf(t, e.rdb, key) != lock.Token() {
			t.Errorf("the key holds %q, want the token %q", value(t, e.rdb, key), lock.Token())
		}
		info, err := e.locker.Inspect(ctx, key)
		if err != nil || info.Value() != v {
			t.Errorf("Inspect: Value() = %q, %v; want %q", info.Value(), err, v)
		}
		if err := lock.Refresh(ctx, time.Minute); err != nil {
			t.Errorf("Refresh of a lock WithValue(%q): %v", v, err)
		}
		if err := lock.Release(ctx); err != nil {
			t.Errorf("Release of a lock WithValue(%q): %v", v, err)
		}
	}
}

func TestWithValueInvalid(t *testing.T) {
	t.Parallel()
	e := setup(t)
	_, err := e.locker.TryObtain(t.Context(), testenv.Key(t), time.Minute, dlock.WithValue(strings.Repeat("v", dlock.MaxValueLen+1)))
	if !errors.Is(err, dlock.ErrInvalidOption) {
		t.Errorf("TryObtain with a value over MaxValueLen = %v, want ErrInvalidOption", err)
	}
}

// A plain lock, and one of another client, carry no value.
func TestValueWithoutWithValue(t *testing.T) {
	t.Parallel()
	e := setup(t)
	key := testenv.Key(t)
	lock := mustObtain(t, e.locker, key, time.Minute)
	if v := lock.Value(); v != "" {
		t.Errorf("Value() of a lock without WithValue = %q", v)
	}
	lock.Release(t.Context())
	e.rdb.Set(t.Context(), key, "0123456789012345678901.not-ours", time.Minute)
	e.rdb.Set(t.Context(), key+":short", "x.y", time.Minute)
	for _, k := range []string{key, key + ":short"} {
		info, err := e.locker.Inspect(t.Context(), k)
		if err != nil {
			t.Fatal(err)
		}
		if k == key && info.Value() != "not-ours" || k != key && info.Value() != "" {
			t.Errorf("Inspect(%q).Value() = %q", k, info.Value())
		}
	}
}

// Waiters with values go through the queue and the handoffs of fair mode,
// whose scripts split members and messages at colons.
func TestWithValueThroughTheQueue(t *testing.T) {
	t.Parallel()
	e := setup(t)
	key := testenv.Key(t)
	first, err := e.locker.TryObtain(t.Context(), key, time.Minute, dlock.WithValue("first:holder"))
	if err != nil {
		t.Fatal(err)
	}
	for _, fair := range []bool{false, true} {
		opts := []dlock.ObtainOption{dlock.WithValue("waiter:a%b")}
		if fair {
			opts = append(opts, dlock.WithFair())
		}
		var wg sync.WaitGroup
		var next *dlock.Lock
		wg.Go(func() {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			next, err = e.locker.Obtain(ctx, key, time.Minute, opts...)
		})
		waitQueued(t, e.rdb, key, 1)
		if err := first.Release(t.Context()); err != nil {
			t.Fatal(err)
		}
		wg.Wait()
		if err != nil || next.Value() != "waiter:a%b" {
			t.Fatalf("fair %v: the waiter got %v, %v", fair, next, err)
		}
		first = next
	}
	first.Release(t.Context())
}

func TestWithValueRedlock(t *testing.T) {
	t.Parallel()
	e := setupQuorum(t, 3)
	lock, err := e.locker.TryObtain(t.Context(), testenv.Key(t), time.Minute, dlock.WithValue("node:7"))
	if err != nil {
		t.Fatal(err)
	}
	defer lock.Release(t.Context())
	info, err := e.locker.Inspect(t.Context(), testenv.Key(t))
	if err != nil || info.Value() != "node:7" || lock.Value() != "node:7" {
		t.Errorf("Value() of a Redlock lock: %q and %q (%v), want node:7", lock.Value(), info.Value(), err)
	}
	for info, err := range e.locker.Scan(t.Context(), testenv.Key(t)) {
		if err != nil || info.Value() != "node:7" {
			t.Errorf("Scan: Value() = %q, %v", info.Value(), err)
		}
	}
}

// Holder names: the default names the host, pid and program; a Client's
// own name and a value travel together in the token, whatever they hold;
// Inspect tells them, and when the holding began.
func TestHolderName(t *testing.T) {
	t.Parallel()
	e := setup(t)
	ctx := testenv.Timeout(t, 10*time.Second)
	key := testenv.Key(t)
	before := time.Now()
	lock := mustObtain(t, e.locker, key, time.Minute)
	info, err := e.locker.Inspect(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	host, _ := os.Hostname()
	// The default, as WithHolderName says: the host, the pid and the program.
	if want := host + " pid " + strconv.Itoa(os.Getpid()) + " (" + filepath.Base(os.Args[0]) + ")"; info.HolderName != want {
		t.Errorf("HolderName = %q, want the default %q", info.HolderName, want)
	}
	if info.Since.Before(before.Add(-time.Second)) || info.Since.After(time.Now().Add(time.Second)) {
		t.Errorf("Since = %v, want about %v", info.Since, before)
	}
	_ = lock.Release(ctx)

	for _, tc := range []struct{ name, value string }{
		{"billing-7", ""}, {"a.b:c%d~e f", "v.1:2%3~"}, {"", "only a value"}, {"only a name", ""},
	} {
		locker := lockenv.Locker(t, e.rdb, dlock.WithHolderName(tc.name))
		lock, err := locker.TryObtain(ctx, key, time.Minute, dlock.WithValue(tc.value))
		if err != nil {
			t.Fatal(err)
		}
		info, err := locker.Inspect(ctx, key)
		if err != nil || info.HolderName != tc.name || info.Value() != tc.value || lock.Value() != tc.value {
			t.Errorf("name %q, value %q: Inspect = %q, %q (%v); Lock.Value %q", tc.name, tc.value, info.HolderName, info.Value(), err, lock.Value())
		}
		sem, err := locker.Semaphore(key+":sem", 2).TryAcquire(ctx, time.Minute, dlock.WithValue(tc.value))
		if err != nil {
			t.Fatal(err)
		}
		if info, _ := locker.Inspect(ctx, key+":sem"); len(info.Holders) != 1 || info.Holders[0].HolderName != tc.name || info.Holders[0].Value() != tc.value {
			t.Errorf("name %q, value %q: the semaphore's holder %+v", tc.name, tc.value, info.Holders)
		}
		_ = sem.Release(ctx)
		_ = lock.Release(ctx)
	}
	if _, err := lockenv.Locker(t, e.rdb, dlock.WithHolderName(strings.Repeat("x", dlock.MaxHolderNameLen+1))).TryObtain(ctx, key, time.Minute); !errors.Is(err, dlock.ErrInvalidOption) {
		t.Errorf("a name over MaxHolderNameLen: %v, want ErrInvalidOption", err)
	}
}
