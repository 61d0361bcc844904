package jobs_test

import (
	"context"
	"testing"
	"time"

	"github.com/dlock-go/dlock"
	"github.com/dlock-go/dlock/internal/testenv"
	"github.com/dlock-go/dlock/jobs"
)

// BenchmarkRunUnobserved runs a job in a new slot each time, on a Client
// without an Observer: what the metrics cost a program that does not use
// them (allocs/op, compared before and after they were added).
func BenchmarkRunUnobserved(b *testing.B) {
	locker := dlock.New(testenv.Client(b))
	defer locker.Close()
	runner, err := jobs.New(locker, jobs.WithRetention(time.Minute))
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	name := testenv.Key(b)
	slot := time.Now().Truncate(time.Second)
	b.ReportAllocs()
	for b.Loop() {
		slot = slot.Add(time.Second)
		if out, err := runner.Run(ctx, name, slot, func(context.Context) error { return nil }); out != jobs.Ran || err != nil {
			b.Fatal(out, err)
		}
	}
}
