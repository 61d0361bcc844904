package dlockotel_test

import (
	"context"
	"testing"
	"time"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"

	"github.com/dlock-go/dlock/observe"
	dlockotel "github.com/dlock-go/dlock/otel"
)

// BenchmarkObservePackage measures what recording one package event costs
// the Observer, in process, with the SDK's meter provider: a cache lookup
// (a counter by outcome), a job's run (a counter and a histogram by job
// name and outcome).
func BenchmarkObservePackage(b *testing.B) {
	meters := sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewManualReader()))
	defer meters.Shutdown(context.Background())
	obs, err := dlockotel.New(dlockotel.WithMeterProvider(meters))
	if err != nil {
		b.Fatal(err)
	}
	for _, row := range []struct {
		name string
		e    observe.PackageEvent
	}{
		{"lookup", observe.PackageEvent{Package: observe.PackageCachefill, Op: observe.OpLookup, Outcome: observe.OutcomeHit, Key: "user:42"}},
		{"run", observe.PackageEvent{Package: observe.PackageJobs, Op: observe.OpRun, Outcome: observe.OutcomeRan, Name: "report", Duration: time.Second}},
	} {
		b.Run("event="+row.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				obs.ObservePackage(row.e)
			}
		})
	}
}
