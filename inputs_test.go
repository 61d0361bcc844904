package dlock_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/dlock-go/dlock"
	"github.com/dlock-go/dlock/internal/testenv"
)

func TestBadInputs(t *testing.T) {
	t.Parallel()
	e := setup(t)
	ctx := context.Background()
	key := testenv.Key(t)
	var nilClient *redis.Client

	for _, tc := range []struct {
		name   string
		locker *dlock.Client
		key    string
		ttl    time.Duration
		opts   []dlock.ObtainOption
		want   error
	}{
		{"empty key", e.locker, "", time.Second, nil, dlock.ErrInvalidKey},
		{"zero ttl", e.locker, key, 0, nil, dlock.ErrInvalidTTL},
		{"negative ttl", e.locker, key, -time.Second, nil, dlock.ErrInvalidTTL},
		{"ttl under 1ms", e.locker, key, 999 * time.Microsecond, nil, dlock.ErrInvalidTTL},
		{"nil client", dlock.New(nil), key, time.Second, nil, dlock.ErrNilClient},
		{"typed nil client", dlock.New(nilClient), key, time.Second, nil, dlock.ErrNilClient},
		{"nil client option", dlock.New(e.rdb, nil), key, time.Second, nil, dlock.ErrInvalidOption},
		{"nil logger", dlock.New(e.rdb, dlock.WithLogger(nil)), key, time.Second, nil, dlock.ErrInvalidOption},
		{"nil obtain option", e.locker, key, time.Second, []dlock.ObtainOption{nil}, dlock.ErrInvalidOption},
		{"nil backoff", e.locker, key, time.Second, []dlock.ObtainOption{dlock.WithBackoff(nil)}, dlock.ErrInvalidOption},
		{"backoff min 0", e.locker, key, time.Second, []dlock.ObtainOption{dlock.WithBackoff(dlock.ExponentialBackoff(0, time.Second))}, dlock.ErrInvalidOption},
		{"backoff max < min", e.locker, key, time.Second, []dlock.ObtainOption{dlock.WithBackoff(dlock.ExponentialBackoff(time.Second, time.Millisecond))}, dlock.ErrInvalidOption},
		{"fixed backoff 0", e.locker, key, time.Second, []dlock.ObtainOption{dlock.WithBackoff(dlock.FixedBackoff(0))}, dlock.ErrInvalidOption},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := tc.locker.TryObtain(ctx, tc.key, tc.ttl, tc.opts...); !errors.Is(err, tc.want) {
				t.Errorf("TryObtain = %v, want %v", err, tc.want)
			}
			if _, err := tc.locker.Obtain(ctx, tc.key, tc.ttl, tc.opts...); !errors.Is(err, tc.want) {
				t.Errorf("Obtain = %v, want %v", err, tc.want)
			}
			if tc.locker != e.locker {
				if err := tc.locker.Close(); err != nil {
					t.Errorf("Close: %v", err)
				}
			}
		})
	}
	if keys := e.rdb.Keys(ctx, "*").Val(); len(keys) != 0 {
		t.Errorf("bad inputs left keys behind: %q", keys)
	}
}

func TestUnusualKeys(t *testing.T) {
	t.Parallel()
	e := setup(t)
	ctx := context.Background()
	var binary strings.Builder
	for b := range 256 {
		binary.WriteByte(byte(b))
	}
	for name, key := range map[string]string{
		"binary":        binary.String(),
		"unicode":       "订单:支付:🔒:ключ",
		"one MiB":       strings.Repeat("k", 1<<20),
		"hash tag":      "{user:7}:cart",
		"empty tag":     "a{}b",
		"close brace":   "a}b",
		"open brace":    "a{b",
		"only braces":   "}{",
		"newline space": "a key\r\nwith lines",
	} {
		t.Run(name, func(t *testing.T) {
			lock, err := e.locker.TryObtain(ctx, key, time.Minute)
			if err != nil {
				t.Fatalf("TryObtain: %v", err)
			}
			if got := holderOf(t, e.rdb, key); got != lock.Token() {
				t.Fatalf("the key does not hold the token")
			}
			if _, err := e.locker.TryObtain(ctx, key, time.Minute); !errors.Is(err, dlock.ErrNotObtained) {
				t.Errorf("second TryObtain = %v, want ErrNotObtained", err)
			}
			if err := lock.Refresh(ctx, time.Minute); err != nil {
				t.Errorf("Refresh: %v", err)
			}
			if err := lock.Release(ctx); err != nil {
				t.Errorf("Release: %v", err)
			}
			if n := e.rdb.Exists(ctx, key).Val(); n != 0 {
				t.Errorf("key exists after Release")
			}
		})
	}
}

func TestErrorMessagesShortenLongKeys(t *testing.T) {
	t.Parallel()
	e := setup(t)
	key := strings.Repeat("x", 1<<20)
	mustObtain(t, e.locker, key, time.Minute)
	_, err := e.locker.TryObtain(context.Background(), key, time.Minute)
	if !errors.Is(err, dlock.ErrNotObtained) || len(err.Error()) > 300 {
		t.Errorf("error for a 1 MiB key is %d bytes long: %.300q", len(err.Error()), err)
	}
}

// A key of another type is no lock: no wait, no panic, and calls on a lock
// whose key was replaced say it is not held.
func TestKeyOfAnotherType(t *testing.T) {
	t.Parallel()
	e := setup(t)
	ctx := context.Background()
	key := testenv.Key(t)
	e.rdb.HSet(ctx, key, "field", "value")

	if _, err := e.locker.TryObtain(ctx, key, time.Minute); !errors.Is(err, dlock.ErrWrongType) {
		t.Errorf("TryObtain on a hash = %v, want ErrWrongType", err)
	}
	within(t, time.Second, "Obtain on a hash", func() {
		if _, err := e.locker.Obtain(testenv.Timeout(t, 10*time.Second), key, time.Minute); !errors.Is(err, dlock.ErrWrongType) {
			t.Errorf("Obtain on a hash = %v, want ErrWrongType", err)
		}
	})

	other := key + ":replaced"
	lock := mustObtain(t, e.locker, other, time.Minute)
	e.rdb.Del(ctx, other)
	e.rdb.RPush(ctx, other, "x")
	if err := lock.Refresh(ctx, time.Minute); !errors.Is(err, dlock.ErrNotHeld) {
		t.Errorf("Refresh of a lock replaced by a list = %v, want ErrNotHeld", err)
	}
	lock = mustObtain(t, e.locker, key+":again", time.Minute)
	e.rdb.Del(ctx, key+":again")
	e.rdb.SAdd(ctx, key+":again", "x")
	if _, err := lock.TTL(ctx); !errors.Is(err, dlock.ErrNotHeld) {
		t.Errorf("TTL of a lock replaced by a set = %v, want ErrNotHeld", err)
	}
	if err := lock.Release(ctx); !errors.Is(err, dlock.ErrNotHeld) {
		t.Errorf("Release of a lock replaced by a set = %v, want ErrNotHeld", err)
	}
	if typ := e.rdb.Type(ctx, key+":again").Val(); typ != "set" {
		t.Errorf("the set was touched: type %q", typ)
	}
}

func FuzzObtain(f *testing.F) {
	e := setup(f)
	f.Add("k", int64(1000))
	f.Add("", int64(1000))
	f.Add("k", int64(0))
	f.Add("k", int64(-5))
	f.Add("{tag}k", int64(1))
	f.Add("a}b", int64(999))
	f.Add("\x00\xff", int64(1<<40))
	f.Fuzz(func(t *testing.T, key string, ttlMicros int64) {
		ctx := context.Background()
		ttl := time.Duration(ttlMicros) * time.Microsecond
		lock, err := e.locker.TryObtain(ctx, key, ttl)
		switch {
		case key == "":
			if !errors.Is(err, dlock.ErrInvalidKey) {
				t.Fatalf("empty key: %v, want ErrInvalidKey", err)
			}
			return
		case ttl < time.Millisecond:
			if !errors.Is(err, dlock.ErrInvalidTTL) {
				t.Fatalf("ttl %v: %v, want ErrInvalidTTL", ttl, err)
			}
			return
		case errors.Is(err, dlock.ErrNotObtained):
			return // an earlier input with the same key and a long ttl
		case err != nil:
			t.Fatalf("TryObtain(%q, %v): %v", key, ttl, err)
		}
		if err := lock.Release(ctx); err != nil && !errors.Is(err, dlock.ErrNotHeld) {
			t.Fatalf("Release: %v", err)
		}
		e.rdb.Del(ctx, key)
	})
}

// The shared holds' scripts take any name, limit and ttl: a clear error
// or a holding, never a script error, and the limit holds.
func FuzzSharedHold(f *testing.F) {
	e := setup(f)
	f.Add("s", 1, int64(1000), uint8(0))
	f.Add("", 3, int64(1000), uint8(1))
	f.Add("s", 0, int64(1000), uint8(0))
	f.Add("s", -2, int64(1000), uint8(0))
	f.Add("{tag}s", 1<<40, int64(1), uint8(2))
	f.Add("a}b", 2, int64(-5), uint8(1))
	f.Add("\x00\xff:%", 2, int64(1<<40), uint8(2))
	f.Fuzz(func(t *testing.T, name string, limit int, ttlMicros int64, kind uint8) {
		ctx := context.Background()
		ttl := time.Duration(ttlMicros) * time.Microsecond
		var acquire func() (*dlock.Lock, error)
		switch kind % 3 {
		case 0:
			sem := e.locker.Semaphore(name, limit)
			acquire = func() (*dlock.Lock, error) { return sem.TryAcquire(ctx, ttl, dlock.WithValue(name)) }
		case 1:
			acquire = func() (*dlock.Lock, error) { return e.locker.RWMutex(name).TryRLock(ctx, ttl) }
		default:
			acquire = func() (*dlock.Lock, error) { return e.locker.RWMutex(name).TryLock(ctx, ttl) }
		}
		lock, err := acquire()
		switch {
		case name == "":
			if !errors.Is(err, dlock.ErrInvalidKey) && !errors.Is(err, dlock.ErrInvalidOption) {
				t.Fatalf("empty name: %v, want ErrInvalidKey", err)
			}
			return
		case kind%3 == 0 && limit < 1:
			if !errors.Is(err, dlock.ErrInvalidOption) {
				t.Fatalf("limit %d: %v, want ErrInvalidOption", limit, err)
			}
			return
		case ttl < time.Millisecond:
			if !errors.Is(err, dlock.ErrInvalidTTL) {
				t.Fatalf("ttl %v: %v, want ErrInvalidTTL", ttl, err)
			}
			return
		case errors.Is(err, dlock.ErrNotObtained), errors.Is(err, dlock.ErrWrongType), errors.Is(err, dlock.ErrLimitMismatch):
			return // an earlier input under the same name
		case err != nil:
			t.Fatalf("acquire %d of %q, limit %d, ttl %v: %v", kind%3, name, limit, ttl, err)
		}
		info, err := e.locker.Inspect(ctx, name)
		if err != nil {
			t.Fatalf("Inspect(%q): %v", name, err)
		}
		if kind%3 == 0 && len(info.Holders) > limit {
			t.Fatalf("%d permits of %d", len(info.Holders), limit)
		}
		if err := lock.Release(ctx); err != nil && !errors.Is(err, dlock.ErrNotHeld) {
			t.Fatalf("Release: %v", err)
		}
		if _, err := e.locker.ForceRelease(ctx, name); err != nil {
			t.Fatalf("ForceRelease(%q): %v", name, err)
		}
	})
}
