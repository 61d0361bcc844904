package dlock_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/dlock-go/dlock"
	"github.com/dlock-go/dlock/internal/testenv"
	"github.com/dlock-go/dlock/internal/testenv/lockenv"
	"github.com/dlock-go/dlock/redistest"
)

// A one-node Redis Cluster that owns every slot: enough to prove that the
// scripts' keys always share a slot (Redis refuses them with CROSSSLOT
// otherwise) and that a ClusterClient works. Failover and several primaries
// are tested with the Redlock and Cluster work.
func TestClusterClient(t *testing.T) {
	t.Parallel()
	ctx := testenv.Timeout(t, 20*time.Second)
	locker := lockenv.Locker(t, newCluster(t))

	for _, key := range []string{"order:42", "{user:7}:cart", "a}b", "a{}b", "订单", "\x00\xff}"} {
		lock, err := locker.TryObtain(ctx, key, time.Minute)
		if err != nil {
			t.Fatalf("TryObtain(%q) on a cluster: %v", key, err)
		}
		if _, err := locker.TryObtain(ctx, key, time.Minute); !errors.Is(err, dlock.ErrNotObtained) {
			t.Errorf("second TryObtain(%q) = %v, want ErrNotObtained", key, err)
		}
		if err := lock.Refresh(ctx, time.Minute); err != nil {
			t.Errorf("Refresh(%q): %v", key, err)
		}
		if _, err := lock.TTL(ctx); err != nil {
			t.Errorf("TTL(%q): %v", key, err)
		}
		if err := lock.Release(ctx); err != nil {
			t.Errorf("Release(%q): %v", key, err)
		}
	}
}

// newCluster starts a one-node Redis Cluster that owns every slot and
// returns a ClusterClient to it, closed when the test ends.
func newCluster(t *testing.T) *redis.ClusterClient {
	t.Helper()
	srv := redistest.NewServer(t, redistest.WithArgs("--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf"))
	ctx := testenv.Timeout(t, 20*time.Second)
	admin := srv.Client()
	if err := admin.Do(ctx, "CLUSTER", "ADDSLOTSRANGE", 0, 16383).Err(); err != nil {
		t.Fatalf("CLUSTER ADDSLOTSRANGE: %v", err)
	}
	for !clusterOK(ctx, admin) {
		if ctx.Err() != nil {
			t.Fatal("the cluster did not become ok")
		}
		time.Sleep(20 * time.Millisecond)
	}
	rdb := redis.NewClusterClient(&redis.ClusterOptions{Addrs: []string{srv.Addr()}})
	t.Cleanup(func() { rdb.Close() })
	return rdb
}

func clusterOK(ctx context.Context, rdb *redis.Client) bool {
	info, err := rdb.ClusterInfo(ctx).Result()
	return err == nil && strings.Contains(info, "cluster_state:ok")
}
