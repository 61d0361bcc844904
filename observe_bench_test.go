package dlock_test

import (
	"context"
	"testing"
	"time"

	"github.com/dlock-go/dlock"
	"github.com/dlock-go/dlock/observe"
	"github.com/dlock-go/dlock/redistest"
)

// BenchmarkObserver measures what an Observer costs: one uncontended lock
// cycle (TryObtain then Release of a free key), serial, on one
// redis-server, beside the same cycle on a Client with a no-op Observer.
// Rows are named observer=... so that benchstat -col /observer puts them
// side by side (docs/benchmarks.md):
//
//	none    no Observer: the Client builds no Event
//	noop    an Observer that does nothing: the cost of building and
//	        telling the events
func BenchmarkObserver(b *testing.B) {
	srv := redistest.NewServer(b)
	const ttl = 10 * time.Second
	for _, row := range []struct {
		name string
		opts []dlock.Option
	}{
		{"none", nil},
		{"noop", []dlock.Option{dlock.WithObserver(observe.ObserverFunc(func(observe.Event) {}))}},
	} {
		// A Redis client of its own: each Client adds a hook to it, which
		// the other rows would pay for.
		locker := dlock.New(srv.Client(), row.opts...)
		b.Cleanup(func() { locker.Close() })
		b.Run("observer="+row.name, func(b *testing.B) {
			ctx := context.Background()
			key := "bench:observer:" + row.name
			b.ReportAllocs()
			for b.Loop() {
				lock, err := locker.TryObtain(ctx, key, ttl)
				if err != nil {
					b.Fatal(err)
				}
				if err := lock.Release(ctx); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
