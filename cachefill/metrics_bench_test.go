package cachefill_test

import (
	"context"
	"testing"
	"time"

	"github.com/dlock-go/dlock"
	"github.com/dlock-go/dlock/cachefill"
	"github.com/dlock-go/dlock/internal/testenv"
)

// BenchmarkGetHitUnobserved is a Get that finds its entry, on a Client
// without an Observer: what the metrics cost a program that does not use
// them (allocs/op, compared before and after they were added).
func BenchmarkGetHitUnobserved(b *testing.B) {
	locker := dlock.New(testenv.Client(b))
	defer locker.Close()
	cache, err := cachefill.New(locker, cachefill.WithPrefix(testenv.Key(b)))
	if err != nil {
		b.Fatal(err)
	}
	defer cache.Close()
	ctx := context.Background()
	load := func(context.Context) ([]byte, error) { return []byte("v"), nil }
	if _, err := cache.Get(ctx, "k", time.Hour, load); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := cache.Get(ctx, "k", time.Hour, load); err != nil {
			b.Fatal(err)
		}
	}
}
