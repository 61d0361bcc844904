package dlock_test

import (
	"errors"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/dlock-go/dlock"
	"github.com/dlock-go/dlock/internal/testenv"
	"github.com/dlock-go/dlock/internal/testenv/lockenv"
	"github.com/dlock-go/dlock/redistest"
)

// dlock.New takes the client go-redis makes for a Sentinel-managed
// deployment. Failovers, with replicas, are tested with the replicated
// deployments work.
func TestSentinelFailoverClient(t *testing.T) {
	t.Parallel()
	primary := redistest.NewServer(t)
	sentinel := redistest.NewSentinel(t, "locks", primary)
	rdb := redis.NewFailoverClient(&redis.FailoverOptions{MasterName: "locks", SentinelAddrs: []string{sentinel.Addr()}})
	t.Cleanup(func() { rdb.Close() })
	locker := lockenv.Locker(t, rdb)
	ctx := testenv.Timeout(t, 10*time.Second)
	key := testenv.Key(t)

	lock, err := locker.TryObtain(ctx, key, time.Minute)
	if err != nil {
		t.Fatalf("TryObtain through Sentinel: %v", err)
	}
	if got := tokenOf(primary.Client().Get(ctx, key).Val()); got != lock.Token() {
		t.Errorf("the primary holds %q, want the lock's token", got)
	}
	if _, err := locker.TryObtain(ctx, key, time.Minute); !errors.Is(err, dlock.ErrNotObtained) {
		t.Errorf("second TryObtain = %v, want ErrNotObtained", err)
	}
	if err := lock.Refresh(ctx, time.Minute); err != nil {
		t.Errorf("Refresh: %v", err)
	}
	if err := lock.Release(ctx); err != nil {
		t.Errorf("Release: %v", err)
	}
}
