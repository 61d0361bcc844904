package dlock_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/dlock-go/dlock"
	"github.com/dlock-go/dlock/internal/engine"
	"github.com/dlock-go/dlock/internal/testenv"
	"github.com/dlock-go/dlock/internal/testenv/lockenv"
	"github.com/dlock-go/dlock/redistest"
)

// redisAddr is the address of a redis-server shared by the examples.
var redisAddr string

func TestMain(m *testing.M) {
	testenv.Main(m, testenv.SharedServer(&redisAddr), testenv.IgnoreRedial())
}

// env is one redis-server, a go-redis client to it, and a dlock Client on it,
// all stopped when the test ends.
type env struct {
	srv    *redistest.Server
	rdb    *redis.Client
	locker *dlock.Client
}

func setup(t testing.TB, opts ...dlock.Option) *env {
	t.Helper()
	srv := redistest.NewServer(t)
	rdb := srv.Client()
	return &env{srv: srv, rdb: rdb, locker: lockenv.Locker(t, rdb, opts...)}
}

// mustObtain obtains key or fails the test.
func mustObtain(t testing.TB, locker *dlock.Client, key string, ttl time.Duration) *dlock.Lock {
	t.Helper()
	lock, err := locker.TryObtain(context.Background(), key, ttl)
	if err != nil {
		t.Fatalf("TryObtain(%q): %v", key, err)
	}
	return lock
}

// value returns the string at key, or "" if there is none.
func value(t testing.TB, rdb *redis.Client, key string) string {
	t.Helper()
	v, err := rdb.Get(context.Background(), key).Result()
	if errors.Is(err, redis.Nil) {
		return ""
	}
	if err != nil {
		t.Fatalf("GET %q: %v", key, err)
	}
	return v
}

// holderOf returns the token of the lock at key (see tokenOf), or "".
func holderOf(t testing.TB, rdb *redis.Client, key string) string {
	t.Helper()
	return tokenOf(value(t, rdb, key))
}

// tokenOf returns the holder's token of a lock's value in Redis, which
// holds the time of the acquire too.
func tokenOf(v string) string {
	token, _ := engine.SplitValue(v)
	return token
}

// newLocker is lockenv.Locker under the name the README's tests call.
func newLocker(t testing.TB, rdb redis.UniversalClient, opts ...dlock.Option) *dlock.Client {
	t.Helper()
	return lockenv.Locker(t, rdb, opts...)
}
