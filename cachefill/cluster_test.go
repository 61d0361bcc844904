package cachefill_test

import (
	"testing"
	"time"

	"github.com/dlock-go/dlock/cachefill"
	"github.com/dlock-go/dlock/internal/testenv"
	"github.com/dlock-go/dlock/redistest"
)

// On a Redis Cluster, each entry's four keys (entry, lock, fill messages,
// claim) share a slot, so its scripts run: a miss fills and a hit reads,
// for keys of every shape, across two Caches, and Invalidate marks.
func TestCluster(t *testing.T) {
	t.Parallel()
	cluster := redistest.NewCluster(t, 3, 0)
	first, second := newCache(t, cluster.Client()), newCache(t, cluster.Client())
	ctx := testenv.Timeout(t, 20*time.Second)
	for _, key := range []string{"user:42", "{shop-7}shirt", "a}b", "}odd", "x{"} {
		src := &source{value: "v:" + key}
		for _, c := range []*cachefill.Cache{first, second} {
			if v, err := c.Get(ctx, key, time.Minute, src.load); err != nil || string(v) != "v:"+key {
				t.Errorf("Get(%q) = %q, %v", key, v, err)
			}
		}
		if n := src.loads.Load(); n != 1 {
			t.Errorf("%q loaded %d times, want once", key, n)
		}
		if err := first.Invalidate(ctx, key); err != nil {
			t.Errorf("Invalidate(%q) = %v", key, err)
		}
		rdb := cluster.Client()
		entry, lock := cachefill.EntryKey(first, key), cachefill.LockKey(first, key)
		if a, b := rdb.ClusterKeySlot(ctx, entry).Val(), rdb.ClusterKeySlot(ctx, lock).Val(); a != b {
			t.Errorf("%q: entry in slot %d, lock in %d", key, a, b)
		}
	}
}

// On Sentinel, a Cache runs on a Client made on the failover client: a miss
// loads once, and a second Cache gets the stored entry.
func TestSentinel(t *testing.T) {
	t.Parallel()
	d := redistest.NewSentinelDeployment(t, "cachefill")
	first, second := newCache(t, d.FailoverClient()), newCache(t, d.FailoverClient())
	ctx := testenv.Timeout(t, 20*time.Second)
	src := &source{value: "v"}
	for _, c := range []*cachefill.Cache{first, second} {
		if v, err := c.Get(ctx, "user:42", time.Minute, src.load); err != nil || string(v) != "v" {
			t.Errorf("Get = %q, %v", v, err)
		}
	}
	if n := src.loads.Load(); n != 1 {
		t.Errorf("loaded %d times, want once", n)
	}
}
