package dlock_test

import (
	"context"
	"errors"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dlock-go/dlock"
	"github.com/dlock-go/dlock/internal/testenv"
	"github.com/dlock-go/dlock/internal/testenv/lockenv"
	"github.com/dlock-go/dlock/redistest"
)

// Concurrent calls of one Client on a Redis Cluster go out in pipelines that
// go-redis splits by slot owner, and follow a failover: while the primary
// hands its slots to its replica, the batches in flight meet MOVED (or a
// primary that holds writes) and go where the slots went. Each goroutine
// keeps its own key, so every call either obtains it or fails with an error
// naming it; after the failover every goroutine goes on obtaining it.
func TestBatchClusterFailover(t *testing.T) {
	t.Parallel()
	cluster := redistest.NewCluster(t, 1, 1)
	locker := lockenv.Locker(t, cluster.Client())
	const goroutines = 16
	var cycles [goroutines]atomic.Int64
	failedOver := make(chan struct{})
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for g := range goroutines {
		key := "batch:cluster:" + strconv.Itoa(g)
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				settled := false // the failover was over before the cycle began
				select {
				case <-failedOver:
					settled = true
				default:
				}
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				lock, err := locker.TryObtain(ctx, key, time.Minute)
				if err == nil {
					err = lock.Release(ctx)
				}
				cancel()
				var nodeErr *dlock.NodeError
				switch {
				case err == nil:
				case settled:
					t.Errorf("%s after the failover: %v", key, err)
					return
				case !errors.Is(err, dlock.ErrNotObtained) && !errors.Is(err, dlock.ErrNotHeld) &&
					(!errors.As(err, &nodeErr) || nodeErr.Key != key):
					t.Errorf("%s during the failover: %v, want an error naming the key", key, err)
				}
				cycles[g].Add(1)
			}
		})
	}
	testenv.Eventually(t, 20*time.Second, "cycles before the failover", func() bool { return cycles[0].Load() > 20 })
	cluster.Failover(cluster.Primaries()[0])
	close(failedOver)
	after := make([]int64, goroutines)
	for g := range after {
		after[g] = cycles[g].Load()
	}
	testenv.Eventually(t, 20*time.Second, "cycles after the failover", func() bool {
		for g := range after {
			if cycles[g].Load() < after[g]+20 {
				return false
			}
		}
		return true
	})
	close(stop)
	wg.Wait()
}
