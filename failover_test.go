package dlock_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/dlock-go/dlock"
	"github.com/dlock-go/dlock/internal/testenv"
	"github.com/dlock-go/dlock/internal/testenv/lockenv"
	"github.com/dlock-go/dlock/redistest"
)

// Locks on a real Cluster of three primaries with a replica each: keys in
// every primary's slot range, with and without hash tags, in plain and fair
// mode; then a manual failover and a killed primary while locks are held.
// WithReplicaAck makes every lock reach a replica before it counts, so
// both failovers keep them.
func TestClusterFailover(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a 6-node cluster and waits for two failovers")
	}
	t.Parallel()
	cluster := redistest.NewCluster(t, 3, 1)
	rdb := cluster.Client()
	var buf strings.Builder
	logs := syncWriter{w: &buf}
	locker := lockenv.Locker(t, rdb, dlock.WithReplicaAck(1, 2*time.Second), dlock.WithLogger(slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))))
	defer func() {
		if t.Failed() {
			t.Log(buf.String())
		}
	}()
	otherRdb := cluster.Client()
	other := lockenv.Locker(t, otherRdb)
	ctx := context.Background()

	// Three keys on each primary, of the shapes that matter for side keys.
	byPrimary := map[*redistest.Server][]string{}
	for i := 0; len(byPrimary) < 3 || minLen(byPrimary) < 3; i++ {
		key := [...]string{"order:%d", "{user:%d}:cart", "odd}key:%d"}[i%3]
		key = fmt.Sprintf(key, i)
		p := cluster.PrimaryOf(key)
		if len(byPrimary[p]) < 3 {
			byPrimary[p] = append(byPrimary[p], key)
		}
	}
	var locks []*dlock.Lock
	for _, keys := range byPrimary {
		for i, key := range keys {
			opts := []dlock.ObtainOption{dlock.WithAutoRenew(true)}
			if i == 1 {
				opts = append(opts, dlock.WithFair())
			}
			// The ttl outlasts a failover (about three seconds).
			lock, err := locker.TryObtain(ctx, key, 6*time.Second, opts...)
			if err != nil {
				t.Fatalf("TryObtain(%q): %v", key, err)
			}
			locks = append(locks, lock)
		}
	}
	found := 0
	for info, err := range locker.Scan(ctx, "*") {
		if err != nil {
			t.Fatal(err)
		}
		found++
		_ = info
	}
	if found != len(locks) {
		t.Errorf("Scan found %d locks on the cluster, want %d", found, len(locks))
	}

	check := func(when string) {
		t.Helper()
		for _, lock := range locks {
			if !isOpen(lock) {
				t.Errorf("%s: lock %q lost: %v", when, lock.Key(), lock.Err())
				continue
			}
			if _, err := other.TryObtain(ctx, lock.Key(), time.Second); !errors.Is(err, dlock.ErrNotObtained) {
				t.Errorf("%s: another client's TryObtain(%q) = %v, want ErrNotObtained", when, lock.Key(), err)
			}
		}
	}

	primaries := cluster.Primaries()
	cluster.Failover(primaries[0])
	check("after a manual failover")

	primaries[1].Kill()
	cluster.WaitFailover(primaries[1])
	// The other client has not sent anything since the failover, so its
	// slot map is old: go-redis would find the new one only after failing
	// on the dead node. (The locker's renewals find it by themselves.)
	otherRdb.ReloadState(ctx)
	time.Sleep(2 * time.Second) // a renewal period after the failover
	check("after a primary was killed")

	for _, lock := range locks {
		if err := lock.Release(ctx); err != nil {
			t.Errorf("Release(%q): %v (Err: %v)", lock.Key(), err, lock.Err())
		}
	}
}

func minLen(m map[*redistest.Server][]string) int {
	n := -1
	for _, v := range m {
		if n < 0 || len(v) < n {
			n = len(v)
		}
	}
	return n
}

// A lock on a Sentinel deployment (a primary and two replicas), taken with
// WithReplicaAck, survives the primary being killed: the replica Sentinel
// promotes has it, the renewals follow the new primary, and nobody else can
// take it meanwhile.
func TestSentinelFailover(t *testing.T) {
	if testing.Short() {
		t.Skip("waits for a Sentinel failover")
	}
	t.Parallel()
	d := redistest.NewSentinelDeployment(t, "locks")
	rdb := d.FailoverClient(func(o *redis.FailoverOptions) { o.MaxRetries = -1 })
	locker := lockenv.Locker(t, rdb, dlock.WithReplicaAck(2, 2*time.Second))
	ctx := context.Background()
	key := testenv.Key(t)
	// The ttl outlasts a failover (about three seconds).
	lock, err := locker.TryObtain(ctx, key, 6*time.Second, dlock.WithAutoRenew(true))
	if err != nil {
		t.Fatal(err)
	}

	old := d.Primary()
	old.Kill()
	d.WaitFailover(old)
	time.Sleep(time.Second) // a renewal period after the failover

	if !isOpen(lock) {
		t.Fatalf("lost in the failover: %v", lock.Err())
	}
	other := lockenv.Locker(t, d.FailoverClient())
	if _, err := other.TryObtain(ctx, key, time.Second); !errors.Is(err, dlock.ErrNotObtained) {
		t.Errorf("another client's TryObtain after the failover = %v, want ErrNotObtained", err)
	}
	if err := lock.Release(ctx); err != nil {
		t.Fatal(err)
	}
}
