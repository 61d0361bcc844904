package dlockotel_test

import (
	"context"
	"testing"
	"time"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/dlock-go/dlock"
	dlockotel "github.com/dlock-go/dlock/otel"
	"github.com/dlock-go/dlock/redistest"
)

// BenchmarkObserver measures what the OTel Observer costs: one uncontended
// lock cycle (TryObtain then Release of a free key), serial, on one
// redis-server, on a Client without an Observer, and with the Observer on
// SDK providers (every span sampled, recorded in memory and dropped, and
// the metrics aggregated by a manual reader). benchstat -col /observer
// puts the rows side by side (docs/benchmarks.md).
func BenchmarkObserver(b *testing.B) {
	srv := redistest.NewServer(b)
	tracer := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(discard{}))
	meters := sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewManualReader()))
	b.Cleanup(func() {
		_ = tracer.Shutdown(context.Background())
		_ = meters.Shutdown(context.Background())
	})
	observer, err := dlockotel.New(dlockotel.WithTracerProvider(tracer), dlockotel.WithMeterProvider(meters))
	if err != nil {
		b.Fatal(err)
	}
	for _, row := range []struct {
		name string
		opts []dlock.Option
	}{
		{"none", nil},
		{"otel", []dlock.Option{dlock.WithObserver(observer)}},
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

// discard is a span processor that drops every span it is given.
type discard struct{}

func (discard) OnStart(context.Context, sdktrace.ReadWriteSpan) {}
func (discard) OnEnd(sdktrace.ReadOnlySpan)                     {}
func (discard) Shutdown(context.Context) error                  { return nil }
func (discard) ForceFlush(context.Context) error                { return nil }
