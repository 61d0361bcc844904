package dlockprom_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/dlock-go/dlock"
	dlockprom "github.com/dlock-go/dlock/prometheus"
	"github.com/dlock-go/dlock/redistest"
)

// BenchmarkCollector measures what the Collector costs: one uncontended
// lock cycle (TryObtain then Release of a free key), serial, on one
// redis-server, on a Client without an Observer, with the Collector, and
// with the Collector and a key label. benchstat -col /observer puts the
// rows side by side (docs/benchmarks.md).
func BenchmarkCollector(b *testing.B) {
	srv := redistest.NewServer(b)
	plain, err := dlockprom.New()
	if err != nil {
		b.Fatal(err)
	}
	keyed, err := dlockprom.New(dlockprom.WithKeyLabel(func(key string) string { p, _, _ := strings.Cut(key, ":"); return p }))
	if err != nil {
		b.Fatal(err)
	}
	for _, row := range []struct {
		name string
		opts []dlock.Option
	}{
		{"none", nil},
		{"prometheus", []dlock.Option{dlock.WithObserver(plain)}},
		{"prometheus-key", []dlock.Option{dlock.WithObserver(keyed)}},
	} {
		// A Redis client of its own: each Client adds a hook to it, which
		// the other rows would pay for.
		locker := dlock.New(srv.Client(), row.opts...)
		b.Cleanup(func() { locker.Close() })
		b.Run("observer="+row.name, func(b *testing.B) {
			ctx := context.Background()
			key := "bench:" + row.name
			b.ReportAllocs()
			for b.Loop() {
				lock, err := locker.TryObtain(ctx, key, 10*time.Second)
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
