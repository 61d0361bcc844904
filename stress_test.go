package dlock_test

import (
	"context"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/dlock-go/dlock"
	"github.com/dlock-go/dlock/internal/testenv"
	"github.com/dlock-go/dlock/internal/testenv/lockenv"
)

// Several Clients, each with many goroutines, increment a counter in Redis
// with a read, a sleep and a write: a lost update for every overlap of two
// holders. Under the lock the final count must be exact.
func TestMutualExclusionStress(t *testing.T) {
	t.Parallel()
	e := setup(t)
	const clients, goroutines, rounds = 4, 8, 12
	key, counter := testenv.Key(t), testenv.Key(t)+":counter"
	ctx := testenv.Timeout(t, time.Minute)

	var wg sync.WaitGroup
	var inside sync.Mutex // TryLock fails if two holders overlap in this process
	for range clients {
		locker := lockenv.Locker(t, e.srv.Client())
		for range goroutines {
			wg.Go(func() {
				for range rounds {
					if !increment(ctx, t, locker, &inside, key, counter, e) {
						return
					}
				}
			})
		}
	}
	wg.Wait()
	if got, want := value(t, e.rdb, counter), strconv.Itoa(clients*goroutines*rounds); got != want {
		t.Fatalf("counter = %s, want %s: two holders overlapped", got, want)
	}
}

func increment(ctx context.Context, t *testing.T, locker *dlock.Client, inside *sync.Mutex, key, counter string, e *env) bool {
	lock, err := locker.Obtain(ctx, key, 5*time.Second, dlock.WithBackoff(dlock.ExponentialBackoff(time.Millisecond, 8*time.Millisecond)))
	if err != nil {
		t.Errorf("Obtain: %v", err)
		return false
	}
	if !inside.TryLock() {
		t.Errorf("two holders at once")
		return false
	}
	n, _ := e.rdb.Get(ctx, counter).Int()
	time.Sleep(100 * time.Microsecond)
	e.rdb.Set(ctx, counter, n+1, 0)
	inside.Unlock()
	if err := lock.Release(ctx); err != nil {
		t.Errorf("Release: %v", err)
		return false
	}
	return true
}
