package cachefill_test

import (
	"bytes"
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/dlock-go/dlock"
	"github.com/dlock-go/dlock/cachefill"
	"github.com/dlock-go/dlock/internal/testenv"
)

// BenchmarkGetHit is a Get that finds its entry, for entries of a few
// sizes: the path most Gets take. Beside ns/op, B/op says what a hit copies
// (the value once from the reply, once for the caller).
func BenchmarkGetHit(b *testing.B) {
	locker := dlock.New(testenv.Client(b))
	defer locker.Close()
	cache, err := cachefill.New(locker, cachefill.WithPrefix(testenv.Key(b)))
	if err != nil {
		b.Fatal(err)
	}
	defer cache.Close()
	ctx := context.Background()
	for _, size := range []int{16, 64 << 10} {
		value := bytes.Repeat([]byte("v"), size)
		load := func(context.Context) ([]byte, error) { return value, nil }
		key := fmt.Sprint("k", size)
		b.Run(fmt.Sprintf("size=%d", size), func(b *testing.B) {
			if _, err := cache.Get(ctx, key, time.Hour, load); err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			for b.Loop() {
				if _, err := cache.Get(ctx, key, time.Hour, load); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
