package idempotency_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dlock-go/dlock/internal/testenv"
	"github.com/dlock-go/dlock/redistest"
)

// On a Redis Cluster of three primaries, each key's lock and record share a
// slot (Redis refuses a script's keys with CROSSSLOT otherwise), whatever
// the key, and calls run once and replay.
func TestDoOnCluster(t *testing.T) {
	t.Parallel()
	cluster := redistest.NewCluster(t, 3, 0)
	store := newStore(t, cluster.Client())
	ctx := testenv.Timeout(t, 20*time.Second)
	var runs atomic.Int32
	keys := []string{"order:1", "{user:7}:cart", "a}b", "a{}b", "订单", "\x00\xff}"}
	for i := range 20 {
		keys = append(keys, fmt.Sprint("item:", i)) // spread over the three primaries
	}
	for _, key := range keys {
		for _, wantReplayed := range []bool{false, true} {
			result, replayed, err := store.Do(ctx, key, nil, func(context.Context) ([]byte, error) {
				runs.Add(1)
				return []byte(key), nil
			})
			if err != nil || replayed != wantReplayed || string(result) != key {
				t.Fatalf("Do(%q) = %q, %v, %v; want the key, replayed %v", key, result, replayed, err, wantReplayed)
			}
		}
	}
	if n := runs.Load(); n != int32(len(keys)) {
		t.Errorf("fn ran %d times for %d keys", n, len(keys))
	}
}

// On Sentinel, a Store runs on a Client made on the failover client:
// calls run once and replay.
func TestDoOnSentinel(t *testing.T) {
	t.Parallel()
	d := redistest.NewSentinelDeployment(t, "idem")
	store := newStore(t, d.FailoverClient())
	ctx := testenv.Timeout(t, 20*time.Second)
	var runs atomic.Int32
	for _, wantReplayed := range []bool{false, true} {
		result, replayed, err := store.Do(ctx, "order:1", nil, func(context.Context) ([]byte, error) {
			runs.Add(1)
			return []byte("charged"), nil
		})
		if err != nil || replayed != wantReplayed || string(result) != "charged" {
			t.Fatalf("Do = %q, %v, %v; want the result, replayed %v", result, replayed, err, wantReplayed)
		}
	}
	if n := runs.Load(); n != 1 {
		t.Errorf("fn ran %d times, want 1", n)
	}
}
