package cachefill_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/dlock-go/dlock"
	"github.com/dlock-go/dlock/cachefill"
	"github.com/dlock-go/dlock/internal/testenv"
	"github.com/dlock-go/dlock/internal/testenv/lockenv"
)

// Bad input is an error before anything reaches Redis, never a panic.
func TestBadInput(t *testing.T) {
	t.Parallel()
	cache := newCache(t, testenv.Client(t))
	ctx := testenv.Timeout(t, 10*time.Second)
	load := (&source{value: "v"}).load
	key := testenv.NewKey(t)
	tests := []struct {
		name string
		err  error
		want error
	}{
		{"empty key", get(ctx, cache, "", time.Minute, load), cachefill.ErrInvalidKey},
		{"zero ttl", get(ctx, cache, key, 0, load), cachefill.ErrInvalidTTL},
		{"ttl under 1ms", get(ctx, cache, key, time.Microsecond, load), cachefill.ErrInvalidTTL},
		{"nil load", get(ctx, cache, key, time.Minute, nil), cachefill.ErrNilLoad},
		{"invalidate empty key", cache.Invalidate(ctx, ""), cachefill.ErrInvalidKey},
		{"not made by New", get(ctx, new(cachefill.Cache), key, time.Minute, load), cachefill.ErrNilClient},
		{"typed without cache", typedGet(ctx, cachefill.Typed[int]{}, key), cachefill.ErrNilClient},
		{"ended context", get(canceled(), cache, key, time.Minute, load), context.Canceled},
	}
	locker := lockenv.Locker(t, nil)
	badOptions := []cachefill.Option{
		nil,
		cachefill.WithPrefix("a{b"),
		cachefill.WithLockTTL(0),
		cachefill.WithLoadTimeout(-time.Second),
		cachefill.WithNotFoundTTL(-1),
		cachefill.WithNotFoundTTL(time.Microsecond),
		cachefill.WithJitter(1),
		cachefill.WithJitter(-0.1),
		cachefill.WithEarlyRefresh(-1),
		cachefill.WithRedisTimeout(0),
		cachefill.WithLogger(nil),
	}
	for i, opt := range badOptions {
		if c, err := cachefill.New(locker, opt); c != nil || !errors.Is(err, cachefill.ErrInvalidOption) {
			t.Errorf("bad option %c: New = %v, %v; want nil, ErrInvalidOption", 'a'+i, c, err)
		}
	}
	if c, err := cachefill.New(locker, cachefill.WithJitter(1), cachefill.WithJitter(0)); c != nil || !errors.Is(err, cachefill.ErrInvalidOption) {
		t.Errorf("a bad option, then a valid one: New = %v, %v; want nil, ErrInvalidOption", c, err)
	}
	nilRedis := dlock.New(nil)
	t.Cleanup(func() { nilRedis.Close() })
	typedNilRedis := dlock.New((*redis.Client)(nil))
	t.Cleanup(func() { typedNilRedis.Close() })
	for what, locker := range map[string]*dlock.Client{"nil": nil, "a Client on nil": nilRedis, "a Client on a nil *redis.Client": typedNilRedis} {
		if c, err := cachefill.New(locker); c != nil || !errors.Is(err, cachefill.ErrNilClient) {
			t.Errorf("New(%s) = %v, %v; want nil, ErrNilClient", what, c, err)
		}
	}
	badClient := dlock.New(testenv.Client(t), dlock.WithLogger(nil))
	t.Cleanup(func() { badClient.Close() })
	if c, err := cachefill.New(badClient); c != nil || !errors.Is(err, cachefill.ErrInvalidOption) || !errors.Is(err, dlock.ErrInvalidOption) {
		t.Errorf("New(a Client given an invalid option) = %v, %v; want nil, ErrInvalidOption", c, err)
	}
	if err := new(cachefill.Cache).Close(); err != nil {
		t.Errorf("Close of a Cache not made by New = %v", err)
	}
	for _, tt := range tests {
		if !errors.Is(tt.err, tt.want) {
			t.Errorf("%s: %v, want %v", tt.name, tt.err, tt.want)
		}
	}
}

func get(ctx context.Context, c *cachefill.Cache, key string, ttl time.Duration, load func(context.Context) ([]byte, error)) error {
	_, err := c.Get(ctx, key, ttl, load)
	return err
}

func typedGet(ctx context.Context, c cachefill.Typed[int], key string) error {
	_, err := c.Get(ctx, key, time.Minute, func(context.Context) (int, error) { return 1, nil })
	return err
}

func canceled() context.Context {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	return ctx
}

// Keys of every shape, binary and long ones too, fill entries of their
// own.
func TestOddKeys(t *testing.T) {
	t.Parallel()
	cache := newCache(t, testenv.Client(t))
	ctx := testenv.Timeout(t, 10*time.Second)
	base := testenv.NewKey(t)
	keys := []string{"}", "}x", "{", "{}", "a}b", "a{b}c", "\x00\xff", string(make([]byte, 10000))}
	for i, k := range keys {
		k += base
		want := string(rune('A' + i))
		v, err := cache.Get(ctx, k, time.Minute, func(context.Context) ([]byte, error) { return []byte(want), nil })
		if err != nil || string(v) != want {
			t.Errorf("Get of key %d = %q, %v; want %q", i, v, err, want)
		}
	}
	for i, k := range keys {
		k += base
		v, err := cache.Get(ctx, k, time.Minute, func(context.Context) ([]byte, error) { return nil, errors.New("loaded again") })
		if want := string(rune('A' + i)); err != nil || string(v) != want {
			t.Errorf("second Get of key %d = %q, %v; want %q", i, v, err, want)
		}
	}
}

// An entry key that holds another type is ErrWrongType, and no load.
func TestWrongType(t *testing.T) {
	t.Parallel()
	rdb := testenv.Client(t)
	cache := newCache(t, rdb)
	key := testenv.NewKey(t)
	ctx := testenv.Timeout(t, 10*time.Second)
	if err := rdb.Set(ctx, cachefill.EntryKey(cache, key), "a string", time.Minute).Err(); err != nil {
		t.Fatal(err)
	}
	loaded := false
	_, err := cache.Get(ctx, key, time.Minute, func(context.Context) ([]byte, error) { loaded = true; return nil, nil })
	if !errors.Is(err, cachefill.ErrWrongType) || loaded {
		t.Errorf("Get of a key of another type = %v (loaded: %v), want ErrWrongType without a load", err, loaded)
	}
	if err := cache.Invalidate(ctx, key); !errors.Is(err, cachefill.ErrWrongType) {
		t.Errorf("Invalidate of a key of another type = %v, want ErrWrongType", err)
	}
}

// Gets that wait when the Cache closes, and calls after, get ErrClosed;
// Close twice is fine.
func TestClosed(t *testing.T) {
	t.Parallel()
	cache := newCache(t, testenv.Client(t))
	key := testenv.NewKey(t)
	g := newGate("v", nil)
	done := make(chan error, 1)
	go func() { done <- get(testenv.Timeout(t, 10*time.Second), cache, key, time.Minute, g.load) }()
	testenv.Eventually(t, 10*time.Second, "the load", func() bool { return g.entered.Load() == 1 })
	if err := cache.Close(); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err == nil {
		t.Errorf("a Get whose Cache closed mid-load returned no error")
	}
	if err := get(context.Background(), cache, key, time.Minute, g.load); !errors.Is(err, cachefill.ErrClosed) {
		t.Errorf("Get after Close = %v, want ErrClosed", err)
	}
	if err := cache.Invalidate(context.Background(), key); !errors.Is(err, cachefill.ErrClosed) {
		t.Errorf("Invalidate after Close = %v, want ErrClosed", err)
	}
	if err := cache.Close(); err != nil {
		t.Errorf("second Close = %v", err)
	}
}
