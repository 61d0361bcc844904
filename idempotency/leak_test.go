package idempotency_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"go.uber.org/goleak"

	"github.com/dlock-go/dlock"
	"github.com/dlock-go/dlock/idempotency"
	"github.com/dlock-go/dlock/internal/testenv"
	"github.com/dlock-go/dlock/redistest"
)

// Calls of every kind leave no goroutine behind once the Store is closed:
// first calls, replays, waits, calls abandoned on a hung Redis, requests
// through the Middleware. Not parallel: it looks at every goroutine of the
// test binary (parallel tests start after it).
func TestNoGoroutinesLeftBehind(t *testing.T) {
	before := goleak.IgnoreCurrent()
	srv := redistest.NewServer(t)
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr(), ReadTimeout: 200 * time.Millisecond, MaxRetries: -1})
	locker := dlock.New(rdb)
	store, err := idempotency.New(locker, idempotency.WithPrefix(prefix(t)))
	if err != nil {
		t.Fatal(err)
	}
	ctx := testenv.Timeout(t, 10*time.Second)
	fn := func(context.Context) ([]byte, error) { return []byte("r"), nil }

	for i := range 5 {
		store.Do(ctx, "k", nil, fn) // first, then replays
		// A wait that ends with its context.
		running, finish := make(chan struct{}), make(chan struct{})
		done := make(chan struct{})
		go func() {
			defer close(done)
			store.Do(ctx, "slow", []byte{byte(i)}, func(context.Context) ([]byte, error) {
				close(running)
				<-finish
				return nil, errors.New("not stored")
			})
		}()
		receive(t, running)
		short, cancel := context.WithTimeout(ctx, 20*time.Millisecond)
		store.Do(short, "slow", nil, fn)
		cancel()
		close(finish)
		receive(t, done)
	}
	// Calls abandoned while Redis hangs.
	srv.Pause()
	for range 3 {
		short, cancel := context.WithTimeout(ctx, 20*time.Millisecond)
		store.Do(short, "hung", nil, fn)
		cancel()
	}
	srv.Resume()

	web := httptest.NewServer(store.Middleware(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {})))
	client := &http.Client{Transport: &http.Transport{}}
	for range 3 {
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, web.URL, nil)
		req.Header.Set(idempotency.KeyHeader, `"k"`)
		if resp, err := client.Do(req); err == nil {
			resp.Body.Close()
		}
	}
	client.CloseIdleConnections()
	web.Close()
	store.Close()
	locker.Close()
	rdb.Close()
	srv.Kill()
	goleak.VerifyNone(t, before)
}
