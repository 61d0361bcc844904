package idempotency_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/dlock-go/dlock/idempotency"
	"github.com/dlock-go/dlock/redistest"
)

// Redis pauses while Do stores fn's result, past go-redis's ReadTimeout
// (default options: 5 s, 3 retries): go-redis sends the store again, and
// both copies run once Redis answers. The first stores the result and
// releases the key's lock; the second finds the lock gone. Do reports the
// result stored, and the next call replays it.
func TestDoStoreResentByTheRedisClient(t *testing.T) {
	t.Parallel()
	srv := redistest.NewServer(t)
	rdb := srv.Client() // go-redis's defaults
	store := newStore(t, rdb, idempotency.WithLockTTL(time.Minute))
	ctx := context.Background()
	// The scripts are loaded (no copy fails with NOSCRIPT), and the pool
	// has connections ready for the copies.
	if _, _, err := store.Do(ctx, "warm", nil, func(context.Context) ([]byte, error) { return []byte("w"), nil }); err != nil {
		t.Fatal(err)
	}
	warm(t, rdb, 4)

	var resumed sync.WaitGroup
	defer resumed.Wait()
	result, replayed, err := store.Do(ctx, "k", nil, func(context.Context) ([]byte, error) {
		srv.Pause() // the store is sent while Redis does not answer
		resumed.Go(func() {
			time.Sleep(7500 * time.Millisecond) // past ReadTimeout and a retry backoff
			srv.Resume()
		})
		return []byte("paid"), nil
	})
	resumed.Wait()
	if err != nil || replayed || string(result) != "paid" {
		t.Fatalf("Do = %q, %v, %v; want the result, stored", result, replayed, err)
	}
	if errors.Is(err, idempotency.ErrNotStored) {
		t.Fatal("Do reported the result not stored")
	}
	result, replayed, err = store.Do(ctx, "k", nil, func(context.Context) ([]byte, error) {
		t.Error("fn ran again: the result was not stored")
		return nil, nil
	})
	if err != nil || !replayed || string(result) != "paid" {
		t.Errorf("next Do = %q, %v, %v; want the stored result replayed", result, replayed, err)
	}
}

// warm makes rdb open n connections, so that a command sent again while
// Redis is paused goes out on one already set up.
func warm(t *testing.T, rdb *redis.Client, n int) {
	t.Helper()
	var wg sync.WaitGroup
	for range n {
		wg.Go(func() { _ = rdb.Do(context.Background(), "BLPOP", "warm:"+t.Name(), "0.1").Err() })
	}
	wg.Wait()
}
