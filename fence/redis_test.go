package fence_test

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/dlock-go/dlock/fence"
	"github.com/dlock-go/dlock/internal/slot"
	"github.com/dlock-go/dlock/internal/testenv"
	"github.com/dlock-go/dlock/redistest"
)

// sharedClient returns a client of the shared redis-server, closed when
// the test ends.
func sharedClient(t testing.TB) *redis.Client {
	t.Helper()
	rdb := redis.NewClient(&redis.Options{Addr: redisAddr})
	t.Cleanup(func() { rdb.Close() })
	return rdb
}

func newRedis(t testing.TB, rdb redis.UniversalClient, opts ...fence.Option) *fence.Redis {
	t.Helper()
	r, err := fence.NewRedis(rdb, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// Set: higher and equal fences write, a lower one is refused and writes
// nothing; the fence is kept beside the value, in its Cluster slot.
func TestRedisSet(t *testing.T) {
	rdb := sharedClient(t)
	r := newRedis(t, rdb)
	ctx := testenv.Timeout(t, time.Minute)
	key := testenv.NewKey(t)
	steps := []struct {
		fence int64
		value string
		stale bool
	}{
		{5, "five", false},
		{5, "five again", false},
		{1<<62 + 7, "huge", false},
		{1<<62 + 6, "just below", true}, // compares exactly past 2^53
		{6, "six", true},
	}
	for _, st := range steps {
		err := r.Set(ctx, key, st.fence, st.value, 0)
		if st.stale {
			var se *fence.StaleError
			if !errors.As(err, &se) || !errors.Is(err, fence.ErrStale) || se.Recorded != 1<<62+7 || se.Fence != st.fence || se.Resource != key {
				t.Fatalf("Set with fence %d = %v; want a StaleError recording %d", st.fence, err, int64(1<<62+7))
			}
			continue
		}
		if err != nil {
			t.Fatalf("Set with fence %d = %v", st.fence, err)
		}
	}
	if v := rdb.Get(ctx, key).Val(); v != "huge" {
		t.Errorf("value %q, want huge", v)
	}
	fenceKey := "{" + key + "}" + fence.FenceKeySuffix
	if f := rdb.Get(ctx, fenceKey).Val(); f != "4611686018427387911" {
		t.Errorf("fence at %s = %q", fenceKey, f)
	}
	if slot.Of(fenceKey) != slot.Of(key) {
		t.Errorf("the fence key is in slot %d, the value in %d", slot.Of(fenceKey), slot.Of(key))
	}
	// A key with a hash tag keeps it.
	tagged := "user:{" + key + "}:balance"
	if err := r.Set(ctx, tagged, 1, "x", 0); err != nil {
		t.Fatal(err)
	}
	if f := rdb.Get(ctx, tagged+fence.FenceKeySuffix).Val(); f != "1" || slot.Of(tagged+fence.FenceKeySuffix) != slot.Of(tagged) {
		t.Errorf("fence of a tagged key: %q", f)
	}
}

// Set's ttl applies to the value; the fence outlives it, so that a stale
// writer cannot write an expired value back.
func TestRedisSetTTL(t *testing.T) {
	rdb := sharedClient(t)
	r := newRedis(t, rdb)
	ctx := testenv.Timeout(t, time.Minute)
	key := testenv.NewKey(t)
	if err := r.Set(ctx, key, 8, "v", time.Minute); err != nil {
		t.Fatal(err)
	}
	if ttl := rdb.PTTL(ctx, key).Val(); ttl <= 0 || ttl > time.Minute {
		t.Errorf("PTTL of the value = %v, want within a minute", ttl)
	}
	if ttl := rdb.PTTL(ctx, "{"+key+"}"+fence.FenceKeySuffix).Val(); ttl != -1 {
		t.Errorf("PTTL of the fence = %v, want none (-1)", ttl)
	}
	rdb.Del(ctx, key) // as if it had expired
	if err := r.Set(ctx, key, 7, "stale", 0); !errors.Is(err, fence.ErrStale) {
		t.Errorf("Set with fence 7 after the value expired = %v; want ErrStale", err)
	}
	if n := rdb.Exists(ctx, key).Val(); n != 0 {
		t.Error("the stale write brought the value back")
	}
}

// HSet: the fence lives in the hash's fence field.
func TestRedisHSet(t *testing.T) {
	rdb := sharedClient(t)
	r := newRedis(t, rdb, fence.WithField("_f"))
	ctx := testenv.Timeout(t, time.Minute)
	key := testenv.NewKey(t)
	if err := r.HSet(ctx, key, 3, map[string]any{"balance": 100, "owner": "ann"}); err != nil {
		t.Fatal(err)
	}
	if err := r.HSet(ctx, key, 3, map[string]any{"balance": 90}); err != nil {
		t.Fatal(err)
	}
	var se *fence.StaleError
	if err := r.HSet(ctx, key, 2, map[string]any{"balance": 0}); !errors.As(err, &se) || se.Recorded != 3 {
		t.Fatalf("HSet with fence 2 = %v; want a StaleError recording 3", err)
	}
	got := rdb.HGetAll(ctx, key).Val()
	if got["balance"] != "90" || got["owner"] != "ann" || got["_f"] != "3" || len(got) != 3 {
		t.Errorf("hash %v", got)
	}
}

// Bad input gets an error, never a panic, and writes nothing.
func TestRedisBadInput(t *testing.T) {
	if _, err := fence.NewRedis(nil); err == nil {
		t.Error("NewRedis(nil) = nil error")
	}
	rdb := sharedClient(t)
	if _, err := fence.NewRedis(rdb, fence.WithField("")); err == nil {
		t.Error("NewRedis with an empty field = nil error")
	}
	r := newRedis(t, rdb)
	ctx := testenv.Timeout(t, time.Minute)
	key := testenv.NewKey(t)
	for name, err := range map[string]error{
		"empty key":            r.Set(ctx, "", 1, "v", 0),
		"negative fence":       r.Set(ctx, key, -1, "v", 0),
		"negative ttl":         r.Set(ctx, key, 1, "v", -time.Second),
		"ttl under 1ms":        r.Set(ctx, key, 1, "v", time.Microsecond),
		"'}' outside a tag":    r.Set(ctx, key+"}", 1, "v", 0),
		"hset empty key":       r.HSet(ctx, "", 1, map[string]any{"a": 1}),
		"hset no field":        r.HSet(ctx, key, 1, nil),
		"hset the fence field": r.HSet(ctx, key, 1, map[string]any{fence.DefaultField: 9}),
	} {
		if err == nil || !strings.HasPrefix(err.Error(), "fence: ") || errors.Is(err, fence.ErrStale) {
			t.Errorf("%s: %v; want an error of fence's", name, err)
		}
	}
	// Fence 0, what Lock.Fence returns to a holder that lost its lock
	// before it asked for one: refused as stale.
	for name, err := range map[string]error{
		"set zero fence":  r.Set(ctx, key, 0, "v", 0),
		"hset zero fence": r.HSet(ctx, key, 0, map[string]any{"a": 1}),
	} {
		var se *fence.StaleError
		if !errors.Is(err, fence.ErrStale) || !errors.As(err, &se) || se.Fence != 0 || se.Resource != key {
			t.Errorf("%s: %v; want a StaleError of fence 0 for %q", name, err, key)
		}
	}
	if n := rdb.Exists(ctx, key, "{"+key+"}"+fence.FenceKeySuffix).Val(); n != 0 {
		t.Errorf("bad input wrote %d keys", n)
	}
	// A fence key that holds no fence, and a value of another type.
	rdb.Set(ctx, "{"+key+"}"+fence.FenceKeySuffix, "garbage", 0)
	if err := r.Set(ctx, key, 1, "v", 0); err == nil || !strings.Contains(err.Error(), "not a positive integer") {
		t.Errorf("Set over a fence key of garbage = %v", err)
	}
	rdb.Set(ctx, key+":h", "string", 0)
	if err := r.HSet(ctx, key+":h", 1, map[string]any{"a": 1}); err == nil || !strings.Contains(err.Error(), "WRONGTYPE") {
		t.Errorf("HSet over a string = %v; want WRONGTYPE", err)
	}
}

// pauseBefore is a go-redis hook that pauses srv (SIGSTOP) before the first
// EVALSHA or EVAL goes out.
type pauseBefore struct {
	srv    *redistest.Server
	paused chan struct{}
	done   atomic.Bool
}

func (h *pauseBefore) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h *pauseBefore) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

func (h *pauseBefore) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if name := cmd.Name(); (name == "evalsha" || name == "eval") && h.done.CompareAndSwap(false, true) {
			h.srv.Pause()
			close(h.paused)
		}
		return next(ctx, cmd)
	}
}

// A Set whose reply is late past go-redis's ReadTimeout, with its default
// options: go-redis sends it again, both copies run once Redis is back,
// and the second passes as an equal fence: one value, the fence once, and
// Set reports success.
func TestRedisSetResent(t *testing.T) {
	srv := redistest.NewServer(t)
	rdb := srv.Client() // go-redis's defaults: ReadTimeout 5 s, MaxRetries 3
	r := newRedis(t, rdb)
	ctx := testenv.Timeout(t, time.Minute)
	key := testenv.NewKey(t)
	if err := r.Set(ctx, key, 1, "first", 0); err != nil { // the script in Redis's cache
		t.Fatal(err)
	}
	testenv.WarmPool(t, rdb, 8)
	commands := testenv.Monitor(t, srv.Addr())
	hook := &pauseBefore{srv: srv, paused: make(chan struct{})}
	rdb.AddHook(hook)
	got := make(chan error, 1)
	go func() { got <- r.Set(ctx, key, 2, "second", time.Hour) }()
	<-hook.paused
	time.Sleep(testenv.ResendPause)
	srv.Resume()
	if err := <-got; err != nil {
		t.Fatalf("Set across the pause = %v; want success", err)
	}
	testenv.Eventually(t, 10*time.Second, "the script run twice or more: go-redis sent a copy", func() bool {
		return commands.Count(`"evalsha"`, `"second"`) >= 2
	})
	check := srv.Client()
	if v, f := check.Get(ctx, key).Val(), check.Get(ctx, "{"+key+"}"+fence.FenceKeySuffix).Val(); v != "second" || f != "2" {
		t.Errorf("after the resent Set: value %q, fence %q; want second, 2", v, f)
	}
	if err := r.Set(ctx, key, 1, "stale", 0); !errors.Is(err, fence.ErrStale) {
		t.Errorf("Set with fence 1 = %v; want ErrStale", err)
	}
}

// On a Redis Cluster, each value and its fence share a slot: Set and HSet
// work for keys in every slot, with and without a hash tag.
func TestRedisCluster(t *testing.T) {
	c := redistest.NewCluster(t, 3, 0)
	rdb := c.Client()
	t.Cleanup(func() { rdb.Close() })
	r := newRedis(t, rdb)
	ctx := testenv.Timeout(t, time.Minute)
	base := testenv.NewKey(t)
	for i := range 20 {
		for _, key := range []string{base + ":" + strconv.Itoa(i), "user:{" + base + strconv.Itoa(i) + "}:balance"} {
			if err := r.Set(ctx, key, 2, "v", time.Minute); err != nil {
				t.Fatalf("Set %q: %v", key, err)
			}
			if err := r.Set(ctx, key, 1, "stale", 0); !errors.Is(err, fence.ErrStale) {
				t.Fatalf("Set %q with a lower fence = %v; want ErrStale", key, err)
			}
			if err := r.HSet(ctx, key+":h", 2, map[string]any{"a": 1}); err != nil {
				t.Fatalf("HSet %q: %v", key, err)
			}
		}
	}
}
