package election_test

import (
	"context"
	"testing"

	"github.com/dlock-go/dlock"
	"github.com/dlock-go/dlock/election"
	"github.com/dlock-go/dlock/internal/testenv"
)

// BenchmarkTermUnobserved campaigns and resigns, on a Client without an
// Observer: what the metrics cost a program that does not use them
// (allocs/op, compared before and after they were added).
func BenchmarkTermUnobserved(b *testing.B) {
	locker := dlock.New(testenv.Client(b))
	defer locker.Close()
	seat, err := election.New(locker, testenv.Key(b))
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		lead, err := seat.Campaign(ctx, "me")
		if err != nil {
			b.Fatal(err)
		}
		if err := lead.Resign(ctx); err != nil {
			b.Fatal(err)
		}
	}
}
