package dlockprom_test

import (
	"testing"
	"time"

	"github.com/dlock-go/dlock/observe"
	dlockprom "github.com/dlock-go/dlock/prometheus"
)

// BenchmarkObservePackage measures what counting one package event costs
// the Collector, in process: a cache lookup (a counter by outcome), a job's
// run (a counter and a histogram by job name and outcome).
func BenchmarkObservePackage(b *testing.B) {
	metrics, err := dlockprom.New()
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
				metrics.ObservePackage(row.e)
			}
		})
	}
}
