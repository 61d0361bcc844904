package idempotency_test

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/dlock-go/dlock/idempotency"
	"github.com/dlock-go/dlock/internal/testenv"
	"github.com/dlock-go/dlock/redistest"
)

// pauseFor pauses srv, returns at once, and resumes srv d after the pause
// began, at the latest when the test ends. resumed is closed once it has.
func pauseFor(t *testing.T, srv *redistest.Server, d time.Duration) (resumed <-chan struct{}) {
	t.Helper()
	srv.Pause()
	done := make(chan struct{})
	wake := time.NewTimer(d)
	go func() {
		<-wake.C
		srv.Resume()
		close(done)
	}()
	t.Cleanup(func() {
		if wake.Stop() {
			srv.Resume()
			return
		}
		<-done
	})
	return done
}

// Redis is paused for 7 s while the Middleware stores a response, with
// go-redis's default options (MaxRetries 3, ReadTimeout 5 s): the store
// does not answer within the lock's ttl, so whether it was stored is not
// known; the log says so, and not that it was not stored. The client has
// the handler's response. Once Redis is back, every copy of the store has
// run and found the lock expired: nothing is stored, and a retry runs the
// handler again.
func TestMiddlewareStoreUnansweredResent(t *testing.T) {
	t.Parallel()
	srv := redistest.NewServer(t)
	rdb := srv.Client() // go-redis's defaults
	logs := &logRecorder{}
	const lockTTL = 3 * time.Second
	var charges atomic.Int32
	wrote, paused := make(chan struct{}), make(chan struct{})
	h := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		n := charges.Add(1)
		w.WriteHeader(http.StatusCreated)
		w.Write([]byte{'0' + byte(n)})
		if n == 1 {
			close(wrote)
			<-paused // Redis hangs as the response is stored
		}
	})
	store := newStore(t, rdb, idempotency.WithLockTTL(lockTTL), idempotency.WithLogger(slog.New(logs)))
	web := serve(t, store.Middleware(h))
	ctx := testenv.Timeout(t, 30*time.Second)

	first := make(chan reply, 1)
	go func() { first <- post(ctx, t, web.URL, `"k"`, "") }()
	receive(t, wrote)
	resumed := pauseFor(t, srv, testenv.ResendPause)
	close(paused)
	if r := receive(t, first); r.status != http.StatusCreated || r.body != "1" {
		t.Errorf("the first request got %d %q, want the handler's 201", r.status, r.body)
	}
	if len(logs.logged("unknown")) != 1 || len(logs.logged("could not be stored")) != 0 {
		t.Errorf("logged %q; want one warning that the store's outcome is unknown, none that it was not stored", logs.all())
	}
	receive(t, resumed)
	var r reply
	testenv.Eventually(t, 20*time.Second, "a retry not told 409 once the lock's key expired", func() bool {
		r = post(ctx, t, web.URL, `"k"`, "")
		return r.status != http.StatusConflict
	})
	if r.status != http.StatusCreated || r.body != "2" || r.header.Get(idempotency.ReplayHeader) != "" {
		t.Errorf("retry: %d %q, replayed %q; want the handler to run again", r.status, r.body, r.header.Get(idempotency.ReplayHeader))
	}
}

// Do's form of TestMiddlewareStoreUnansweredResent, with go-redis's default
// options and with MaxRetries -1: Do returns fn's result and an error
// wrapping ErrMaybeStored, not ErrNotStored.
func TestDoStoreUnansweredResent(t *testing.T) {
	t.Parallel()
	testenv.SlowFaults(t)
	for name, opts := range map[string]func(*redis.Options){
		"default options": func(*redis.Options) {},
		"MaxRetries -1":   noRetries,
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			testDoStoreUnanswered(t, opts)
		})
	}
}

func testDoStoreUnanswered(t *testing.T, opts func(*redis.Options)) {
	srv := redistest.NewServer(t)
	store := newStore(t, srv.Client(opts), idempotency.WithLockTTL(3*time.Second))
	ctx := testenv.Timeout(t, 30*time.Second)
	var resumed <-chan struct{}
	result, _, err := store.Do(ctx, "k", nil, func(context.Context) ([]byte, error) {
		resumed = pauseFor(t, srv, testenv.ResendPause) // Redis hangs as the result is stored
		return []byte("first"), nil
	})
	if !errors.Is(err, idempotency.ErrMaybeStored) || errors.Is(err, idempotency.ErrNotStored) || string(result) != "first" {
		t.Errorf("Do = %q, %v; want its result and ErrMaybeStored, not ErrNotStored", result, err)
	}
	receive(t, resumed)
	result, replayed, err := store.Do(ctx, "k", nil, func(context.Context) ([]byte, error) { return []byte("second"), nil })
	if err != nil || replayed || string(result) != "second" {
		t.Errorf("Do once Redis is back = %q, %v, %v; want fn to run again", result, replayed, err)
	}
}
