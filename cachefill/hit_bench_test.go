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
// (the value from the reply, into the entry, and for the caller).
func BenchmarkGetHit(b *testing.B) {
	cache := newBenchCache(b)
	for _, size := range []int{16, 64 << 10} {
		b.Run(fmt.Sprintf("size=%d", size), func(b *testing.B) {
			benchGetHit(b, cache, fmt.Sprint("k", size), bytes.Repeat([]byte("v"), size))
		})
	}
}

// newBenchCache returns a Cache without an Observer, on a Client of its
// own, both closed at the end of b.
func newBenchCache(b *testing.B) *cachefill.Cache {
	locker := dlock.New(testenv.Client(b))
	b.Cleanup(func() { _ = locker.Close() })
	cache, err := cachefill.New(locker, cachefill.WithPrefix(testenv.Key(b)))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = cache.Close() })
	return cache
}

// benchGetHit stores value at key through a first Get, then measures Gets
// of key, which all find it.
func benchGetHit(b *testing.B, cache *cachefill.Cache, key string, value []byte) {
	ctx := context.Background()
	load := func(context.Context) ([]byte, error) { return value, nil }
	if _, err := cache.Get(ctx, key, time.Hour, load); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := cache.Get(ctx, key, time.Hour, load); err != nil {
			b.Fatal(err)
		}
	}
}
