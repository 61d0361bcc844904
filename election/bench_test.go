package election_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/dlock-go/dlock/election"
	"github.com/dlock-go/dlock/internal/testenv"
	"github.com/dlock-go/dlock/internal/testenv/lockenv"
)

// reportQuantiles reports the median and the 90th percentile of ds.
func reportQuantiles(b *testing.B, ds []time.Duration) {
	slices.Sort(ds)
	b.ReportMetric(float64(ds[len(ds)/2].Microseconds()), "p50-µs")
	b.ReportMetric(float64(ds[len(ds)*9/10].Microseconds()), "p90-µs")
}

// From a leader's Resign to the return of the Campaign of a candidate that
// was waiting: the takeover a planned handover costs.
func BenchmarkTakeoverAfterResign(b *testing.B) {
	name := testenv.NewKey(b)
	a := newElection(b, lockenv.Locker(b, nil), name)
	c := newElection(b, lockenv.Locker(b, nil), name)
	ctx := context.Background()
	leader, err := a.Campaign(ctx, "a")
	if err != nil {
		b.Fatal(err)
	}
	candidate := c
	var ds []time.Duration
	for b.Loop() {
		got := make(chan *election.Leadership)
		go func() {
			l, err := candidate.Campaign(ctx, "next")
			if err != nil {
				b.Error(err)
			}
			got <- l
		}()
		time.Sleep(5 * time.Millisecond) // let it wait
		start := time.Now()
		if err := leader.Resign(ctx); err != nil {
			b.Fatal(err)
		}
		next := <-got
		ds = append(ds, time.Since(start))
		if next == nil {
			b.FailNow()
		}
		// The roles swap: the old leader campaigns next.
		if candidate == c {
			candidate = a
		} else {
			candidate = c
		}
		leader = next
	}
	leader.Resign(ctx)
	reportQuantiles(b, ds)
}

// From a leader's crash (its Client closed, no resignation) to the return of
// the Campaign of a candidate that was waiting: about the lease.
func BenchmarkTakeoverAfterCrash(b *testing.B) {
	const ttl = 500 * time.Millisecond
	name := testenv.NewKey(b)
	ctx := context.Background()
	var ds []time.Duration
	for b.Loop() {
		crashing := lockenv.Locker(b, nil)
		l, err := newElection(b, crashing, name, election.WithTTL(ttl)).Campaign(ctx, "crashing")
		if err != nil {
			b.Fatal(err)
		}
		got := make(chan *election.Leadership)
		go func() {
			next, err := newElection(b, lockenv.Locker(b, nil), name, election.WithTTL(ttl)).Campaign(ctx, "next")
			if err != nil {
				b.Error(err)
			}
			got <- next
		}()
		time.Sleep(5 * time.Millisecond)
		start := time.Now()
		crashing.Close()
		next := <-got
		ds = append(ds, time.Since(start))
		_ = l
		next.Resign(ctx)
	}
	b.ReportMetric(float64(ttl.Milliseconds()), "lease-ms")
	reportQuantiles(b, ds)
}

// From the return of a Campaign, or of a Resign, to the delivery of the
// change by Observe.
func BenchmarkObserveDelivery(b *testing.B) {
	name := testenv.NewKey(b)
	e := newElection(b, lockenv.Locker(b, nil), name)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	observed := newElection(b, lockenv.Locker(b, nil), name).Observe(ctx)
	<-observed // the empty seat
	var ds []time.Duration
	for b.Loop() {
		l, err := e.Campaign(ctx, "a")
		if err != nil {
			b.Fatal(err)
		}
		start := time.Now()
		awaitTerm(observed, l.Term())
		ds = append(ds, time.Since(start))
		l.Resign(ctx)
		start = time.Now()
		awaitTerm(observed, 0)
		ds = append(ds, time.Since(start))
	}
	reportQuantiles(b, ds)
}

// Whether a Leadership still leads: a local check, no round trip.
func BenchmarkLeadershipErr(b *testing.B) {
	l, err := newElection(b, lockenv.Locker(b, nil), testenv.NewKey(b)).Campaign(context.Background(), "a")
	if err != nil {
		b.Fatal(err)
	}
	defer l.Resign(context.Background())
	for b.Loop() {
		if l.Err() != nil {
			b.Fatal(l.Err())
		}
	}
}

// awaitTerm waits until observed delivers a leader of term (0: no leader).
func awaitTerm(observed <-chan election.Leader, term int64) {
	for l := range observed {
		if l.Term == term {
			return
		}
	}
}
