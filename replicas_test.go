package dlock_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/dlock-go/dlock"
	"github.com/dlock-go/dlock/internal/testenv"
	"github.com/dlock-go/dlock/internal/testenv/lockenv"
	"github.com/dlock-go/dlock/redistest"
)

// WithReplicaAck reports a lock obtained only once a replica has it.
func TestReplicaAck(t *testing.T) {
	t.Parallel()
	primary := redistest.NewServer(t)
	replica := redistest.NewReplica(t, primary)
	rdb := primary.Client()
	key := testenv.Key(t)

	locker := lockenv.Locker(t, rdb, dlock.WithReplicaAck(1, time.Second))
	lock, err := locker.TryObtain(context.Background(), key, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	// The replica had it before TryObtain returned.
	if got := tokenOf(replica.Client().Get(context.Background(), key).Val()); got != lock.Token() {
		t.Errorf("the replica holds %q right after TryObtain, want our token", got)
	}
	if err := lock.Release(context.Background()); err != nil {
		t.Fatal(err)
	}

	// Fair mode goes through the same path.
	lock, err = locker.TryObtain(context.Background(), key, time.Minute, dlock.WithFair())
	if err != nil {
		t.Fatal(err)
	}
	_ = lock.Release(context.Background())

	// The replica gone: the lock is refused, and released again.
	replica.Kill()
	within(t, 2*time.Second, "TryObtain with no replica to acknowledge", func() {
		_, err = locker.TryObtain(context.Background(), key, time.Minute)
	})
	if !errors.Is(err, dlock.ErrNotReplicated) {
		t.Fatalf("TryObtain without a replica = %v, want ErrNotReplicated", err)
	}
	if n := rdb.Exists(context.Background(), key).Val(); n != 0 {
		t.Error("the unacknowledged lock was left on the primary")
	}
	t.Log(err)
}

func TestReplicaAckBadInputs(t *testing.T) {
	t.Parallel()
	rdb := redistest.NewServer(t).Client()
	for _, opt := range []dlock.Option{dlock.WithReplicaAck(0, time.Second), dlock.WithReplicaAck(1, 0)} {
		locker := lockenv.Locker(t, rdb, opt)
		if _, err := locker.TryObtain(context.Background(), testenv.Key(t), time.Minute); !errors.Is(err, dlock.ErrInvalidOption) {
			t.Errorf("TryObtain with a bad WithReplicaAck = %v, want ErrInvalidOption", err)
		}
	}
}
