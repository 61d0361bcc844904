package idempotency_test

import (
	"context"
	"strconv"
	"testing"

	"github.com/dlock-go/dlock"
	"github.com/dlock-go/dlock/idempotency"
	"github.com/dlock-go/dlock/internal/testenv"
)

// BenchmarkDoUnobserved is a first call of Do and its replay, on a Client
// without an Observer: what the metrics cost a program that does not use
// them (allocs/op, compared before and after they were added).
func BenchmarkDoUnobserved(b *testing.B) {
	locker := dlock.New(testenv.Client(b))
	defer locker.Close()
	store, err := idempotency.New(locker, idempotency.WithPrefix(testenv.Key(b)))
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	fn := func(context.Context) ([]byte, error) { return []byte("paid"), nil }
	i := 0
	b.ReportAllocs()
	for b.Loop() {
		i++
		key := strconv.Itoa(i)
		for range 2 {
			if _, _, err := store.Do(ctx, key, nil, fn); err != nil {
				b.Fatal(err)
			}
		}
	}
}
