package dlock_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/dlock-go/dlock"
	"github.com/dlock-go/dlock/internal/testenv"
)

// within fails the test if fn takes longer than limit: a call that should
// answer by its context's deadline must not hang on Redis.
func within(t *testing.T, limit time.Duration, what string, fn func()) {
	t.Helper()
	start := time.Now()
	fn()
	if took := time.Since(start); took > limit {
		t.Errorf("%s took %v, want it to return within %v", what, took, limit)
	}
}

func TestObtainDeadlineWhileHeld(t *testing.T) {
	t.Parallel()
	e := setup(t)
	key := testenv.Key(t)
	mustObtain(t, e.locker, key, time.Minute)

	within(t, 2*time.Second, "Obtain with a 200ms deadline", func() {
		_, err := e.locker.Obtain(testenv.Timeout(t, 200*time.Millisecond), key, time.Minute)
		if !errors.Is(err, dlock.ErrNotObtained) || !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("Obtain = %v, want ErrNotObtained and DeadlineExceeded", err)
		}
	})
}

func TestObtainCancelWhileHeld(t *testing.T) {
	t.Parallel()
	e := setup(t)
	key := testenv.Key(t)
	mustObtain(t, e.locker, key, time.Minute)

	cause := errors.New("user went away")
	ctx, cancel := context.WithCancelCause(context.Background())
	time.AfterFunc(100*time.Millisecond, func() { cancel(cause) })
	_, err := e.locker.Obtain(ctx, key, time.Minute)
	if !errors.Is(err, dlock.ErrNotObtained) || !errors.Is(err, context.Canceled) || !errors.Is(err, cause) {
		t.Errorf("Obtain = %v, want ErrNotObtained, Canceled and the cause", err)
	}
}

// A context that is already done stops every call before it reaches Redis.
func TestDoneContextAtEveryStep(t *testing.T) {
	t.Parallel()
	e := setup(t)
	key := testenv.Key(t)
	lock := mustObtain(t, e.locker, key, time.Minute)
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	expired, cancel2 := context.WithDeadline(context.Background(), time.Now().Add(-time.Second))
	defer cancel2()

	for name, ctx := range map[string]context.Context{"cancelled": cancelled, "expired": expired} {
		want := ctx.Err()
		if _, err := e.locker.TryObtain(ctx, key+":other", time.Minute); !errors.Is(err, want) ||
			!strings.Contains(err.Error(), "acquire") || !strings.Contains(err.Error(), key) {
			t.Errorf("%s TryObtain = %v, want %v naming the operation and the key", name, err, want)
		}
		if _, err := e.locker.Obtain(ctx, key, time.Minute); !errors.Is(err, want) || errors.Is(err, dlock.ErrNotObtained) {
			t.Errorf("%s Obtain = %v, want only %v: it never saw the lock", name, err, want)
		}
		if err := lock.Refresh(ctx, time.Hour); !errors.Is(err, want) {
			t.Errorf("%s Refresh = %v, want %v", name, err, want)
		}
		if _, err := lock.TTL(ctx); !errors.Is(err, want) {
			t.Errorf("%s TTL = %v, want %v", name, err, want)
		}
		if err := lock.Release(ctx); !errors.Is(err, want) {
			t.Errorf("%s Release = %v, want %v", name, err, want)
		}
	}
	if n := e.rdb.Exists(context.Background(), key+":other").Val(); n != 0 {
		t.Error("a cancelled TryObtain created the key")
	}
	if ttl, err := lock.TTL(context.Background()); err != nil || ttl > time.Minute {
		t.Errorf("after cancelled calls TTL = %v, %v; want the lock untouched", ttl, err)
	}
}

func TestRedisDownAndBack(t *testing.T) {
	t.Parallel()
	e := setup(t)
	ctx := context.Background()
	key := testenv.Key(t)
	lock := mustObtain(t, e.locker, key, time.Minute)

	e.srv.Kill()
	within(t, 3*time.Second, "calls on a dead Redis with 500ms deadlines", func() {
		var nodeErr *dlock.NodeError
		_, err := e.locker.TryObtain(testenv.Timeout(t, 500*time.Millisecond), key+":2", time.Minute)
		if !errors.As(err, &nodeErr) || errors.Is(err, dlock.ErrNotObtained) {
			t.Errorf("TryObtain on a dead Redis = %v, want a NodeError", err)
		}
		_, err = e.locker.Obtain(testenv.Timeout(t, 500*time.Millisecond), key+":2", time.Minute)
		if err == nil || errors.Is(err, dlock.ErrNotObtained) {
			t.Errorf("Obtain on a dead Redis = %v, want a Redis error, not ErrNotObtained", err)
		}
		if err := lock.Release(testenv.Timeout(t, 500*time.Millisecond)); err == nil || errors.Is(err, dlock.ErrNotHeld) {
			t.Errorf("Release on a dead Redis = %v, want a Redis error, not ErrNotHeld", err)
		}
	})

	e.srv.Start() // empty: the old lock is gone with the data
	if err := lock.Release(ctx); !errors.Is(err, dlock.ErrNotHeld) {
		t.Errorf("Release after the restart = %v, want ErrNotHeld", err)
	}
	again := mustObtain(t, e.locker, key, time.Minute)
	if err := again.Release(ctx); err != nil {
		t.Errorf("Release after recovery: %v", err)
	}
}

// A paused Redis answers nothing; go-redis would wait for its 3s read
// timeout. Every call must still return by its own deadline, and an acquire
// that lands after its caller gave up must be released, not left to expire.
func TestRedisPaused(t *testing.T) {
	t.Parallel()
	e := setup(t)
	ctx := context.Background()
	key := testenv.Key(t)
	lock := mustObtain(t, e.locker, key, time.Minute)

	e.srv.Pause()
	within(t, time.Second, "calls on a paused Redis with 100ms deadlines", func() {
		for _, err := range []error{
			func() error {
				_, err := e.locker.TryObtain(testenv.Timeout(t, 100*time.Millisecond), key+":late", time.Minute)
				return err
			}(),
			func() error {
				_, err := e.locker.Obtain(testenv.Timeout(t, 100*time.Millisecond), key, time.Minute)
				return err
			}(),
			lock.Refresh(testenv.Timeout(t, 100*time.Millisecond), time.Minute),
			func() error { _, err := lock.TTL(testenv.Timeout(t, 100*time.Millisecond)); return err }(),
		} {
			if !errors.Is(err, context.DeadlineExceeded) {
				t.Errorf("call on a paused Redis = %v, want DeadlineExceeded", err)
			}
		}
	})
	e.srv.Resume()
	e.locker.Close() // waits for the abandoned calls and their clean-up

	if n := e.rdb.Exists(ctx, key+":late").Val(); n != 0 {
		t.Errorf("the acquire that landed after its caller gave up was not released")
	}
	if got := holderOf(t, e.rdb, key); got != lock.Token() {
		t.Errorf("the held lock was disturbed: key holds %q", got)
	}
}

func TestScriptCacheFlushed(t *testing.T) {
	t.Parallel()
	e := setup(t)
	ctx := context.Background()
	key := testenv.Key(t)
	lock := mustObtain(t, e.locker, key, time.Minute)

	for step, op := range []func() error{
		func() error { return lock.Refresh(ctx, time.Minute) },
		func() error { _, err := lock.TTL(ctx); return err },
		func() error { return lock.Release(ctx) },
		func() error { _, err := e.locker.TryObtain(ctx, key, time.Minute); return err },
	} {
		if err := e.rdb.ScriptFlush(ctx).Err(); err != nil {
			t.Fatal(err)
		}
		if err := op(); err != nil {
			t.Errorf("step %d after SCRIPT FLUSH: %v", step, err)
		}
	}
}

// Other clients that lock with a plain SET key token NX PX (redis-py's
// Lock, the usual blog code) and release with compare-and-delete.
func TestInteropWithPlainSetNX(t *testing.T) {
	t.Parallel()
	e := setup(t)
	ctx := context.Background()
	key := testenv.Key(t)
	compareAndDelete := redis.NewScript(`if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) end return 0`)

	// Theirs excludes ours.
	if !e.rdb.SetNX(ctx, key, "their-token", time.Minute).Val() {
		t.Fatal("plain SET NX failed on a free key")
	}
	if _, err := e.locker.TryObtain(ctx, key, time.Minute); !errors.Is(err, dlock.ErrNotObtained) {
		t.Fatalf("TryObtain over a plain SET NX lock = %v, want ErrNotObtained", err)
	}
	if n, _ := compareAndDelete.Run(ctx, e.rdb, []string{key}, "their-token").Int(); n != 1 {
		t.Fatal("their release of their own lock failed")
	}

	// Ours excludes theirs, and their release cannot free ours.
	lock := mustObtain(t, e.locker, key, time.Minute)
	if e.rdb.SetNX(ctx, key, "their-token", time.Minute).Val() {
		t.Fatal("plain SET NX took a lock we hold")
	}
	if n, _ := compareAndDelete.Run(ctx, e.rdb, []string{key}, "their-token").Int(); n != 0 {
		t.Fatal("their compare-and-delete freed our lock")
	}
	if got := holderOf(t, e.rdb, key); got != lock.Token() {
		t.Fatalf("key holds %q, want our token", got)
	}
	if err := lock.Release(ctx); err != nil {
		t.Fatalf("Release: %v", err)
	}

	// A plain holder that never publishes a release: Obtain still gets the
	// lock once they delete it.
	e.rdb.Set(ctx, key, "their-token", time.Minute)
	time.AfterFunc(50*time.Millisecond, func() { e.rdb.Del(context.Background(), key) })
	if _, err := e.locker.Obtain(testenv.Timeout(t, 5*time.Second), key, time.Minute); err != nil {
		t.Fatalf("Obtain after their silent release: %v", err)
	}
}

func TestClientClose(t *testing.T) {
	t.Parallel()
	e := setup(t)
	ctx := context.Background()
	lock := mustObtain(t, e.locker, testenv.Key(t), time.Minute)

	if err := e.locker.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if _, err := e.locker.TryObtain(ctx, testenv.Key(t)+":2", time.Minute); !errors.Is(err, dlock.ErrClosed) {
		t.Errorf("TryObtain after Close = %v, want ErrClosed", err)
	}
	if err := lock.Release(ctx); !errors.Is(err, dlock.ErrClosed) {
		t.Errorf("Release after Close = %v, want ErrClosed", err)
	}
	if err := e.locker.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
}

// An acquire that never left the client (Redis refused the connection) has
// nothing to clean up: no background release, no warning about one. The
// client dials port 1, which refuses: a killed test server's port can be
// taken by another test's server, which would answer.
func TestNoCleanupForAcquiresNeverSent(t *testing.T) {
	t.Parallel()
	var logs strings.Builder
	rdb := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"})
	t.Cleanup(func() { rdb.Close() })
	locker := dlock.New(rdb, dlock.WithLogger(newTestLogger(&logs)))

	for range 3 {
		if _, err := locker.TryObtain(context.Background(), testenv.Key(t), time.Minute); err == nil {
			t.Fatal("TryObtain on a dead Redis succeeded")
		}
	}
	locker.Close()
	if logs.Len() > 0 {
		t.Errorf("the Client tried to clean up acquires that were never sent:\n%s", logs.String())
	}
}

// newTestLogger returns a logger that writes text to w, safe to use from
// the Client's goroutines.
func newTestLogger(w io.Writer) *slog.Logger {
	return slog.New(slog.NewTextHandler(&syncWriter{w: w}, nil))
}

// syncWriter serialises writes from the Client's goroutines.
type syncWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (s *syncWriter) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.Write(p)
}

// Close while many goroutines obtain and release, through the goroutine
// path of cancellable contexts: every call either works or says ErrClosed,
// Close waits for the Client's goroutines, and goleak finds none after.
func TestCloseWhileBusy(t *testing.T) {
	t.Parallel()
	e := setup(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			key := testenv.Key(t) + ":" + string(rune('a'+g))
			for {
				lock, err := e.locker.TryObtain(ctx, key, time.Minute)
				if err == nil {
					err = lock.Release(ctx)
				}
				switch {
				case errors.Is(err, dlock.ErrClosed):
					return
				case err != nil:
					t.Errorf("during Close: %v", err)
					return
				}
			}
		})
	}
	time.Sleep(50 * time.Millisecond)
	if err := e.locker.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
	wg.Wait()
}
