package dlock_test

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/dlock-go/dlock"
	"github.com/dlock-go/dlock/redistest"
)

// BenchmarkMultiCycle measures the cycle of a Lock over n keys,
// TryObtainMulti then Release, beside n single locks, TryObtain of each
// key then Release of each, serially, on one redis-server in one run:
// commands per cycle are 2 against 2n.
func BenchmarkMultiCycle(b *testing.B) {
	srv := redistest.NewServer(b)
	locker := dlock.New(srv.Client())
	b.Cleanup(func() { locker.Close() })
	ctx := context.Background()
	const ttl = 10 * time.Second
	for _, n := range []int{2, 8} {
		keys := make([]string, n)
		for i := range keys {
			keys[i] = "{bench}:" + strconv.Itoa(i)
		}
		b.Run("keys="+strconv.Itoa(n)+"/lib=dlock-multi", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				lock, err := locker.TryObtainMulti(ctx, keys, ttl)
				if err != nil {
					b.Fatal(err)
				}
				if err := lock.Release(ctx); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run("keys="+strconv.Itoa(n)+"/lib=dlock-single", func(b *testing.B) {
			b.ReportAllocs()
			locks := make([]*dlock.Lock, n)
			for b.Loop() {
				for i, key := range keys {
					lock, err := locker.TryObtain(ctx, key, ttl)
					if err != nil {
						b.Fatal(err)
					}
					locks[i] = lock
				}
				for _, lock := range locks {
					if err := lock.Release(ctx); err != nil {
						b.Fatal(err)
					}
				}
			}
		})
	}
}
