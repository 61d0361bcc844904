package election_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dlock-go/dlock/election"
	"github.com/dlock-go/dlock/internal/testenv"
	"github.com/dlock-go/dlock/internal/testenv/lockenv"
)

// next returns the next value of ch, or fails the test if none comes in
// time (a limit that only ends a test that would otherwise hang: the lease
// is ten seconds, so a change not pushed would miss it).
func next(t *testing.T, ch <-chan election.Leader) election.Leader {
	t.Helper()
	select {
	case l, ok := <-ch:
		if !ok {
			t.Fatal("Observe's channel closed")
		}
		return l
	case <-time.After(5 * time.Second):
		t.Fatal("no change observed within 5s")
	}
	return election.Leader{}
}

// Observe tells the empty seat, each leader, and the empty seat again,
// pushed: no change waits for a lease to run out.
func TestObserve(t *testing.T) {
	t.Parallel()
	name := testenv.NewKey(t)
	ctx, cancel := context.WithCancel(context.Background())
	ch := newElection(t, lockenv.Locker(t, nil), name).Observe(ctx)
	defer func() {
		cancel()
		for range ch { // closed once its goroutine is done
		}
	}()
	if l := next(t, ch); l != (election.Leader{}) {
		t.Fatalf("first value %+v, want the empty seat", l)
	}
	for _, value := range []string{"a", "b"} {
		l, err := newElection(t, lockenv.Locker(t, nil), name).Campaign(testenv.Timeout(t, 10*time.Second), value)
		if err != nil {
			t.Fatal(err)
		}
		if got := next(t, ch); got != (election.Leader{Value: value, Term: l.Term()}) {
			t.Errorf("observed %+v, want %s in term %d", got, value, l.Term())
		}
		l.Resign(t.Context())
		if got := next(t, ch); got != (election.Leader{}) {
			t.Errorf("observed %+v after the resignation, want the empty seat", got)
		}
	}
}

// Under churn, the terms observed only increase, and once the churn is
// over the last value observed is the leader.
func TestObserveChurn(t *testing.T) {
	t.Parallel()
	name := testenv.NewKey(t)
	ctx, cancel := context.WithCancel(context.Background())
	ch := newElection(t, lockenv.Locker(t, nil), name).Observe(ctx)
	var last atomic.Pointer[election.Leader]
	observed := make(chan struct{})
	go func() {
		defer close(observed)
		var lastTerm int64
		for l := range ch {
			if l.Term != 0 && l.Term <= lastTerm {
				t.Errorf("observed term %d after term %d", l.Term, lastTerm)
			}
			lastTerm = max(lastTerm, l.Term)
			last.Store(&l)
		}
	}()
	var wg sync.WaitGroup
	for i := range 3 {
		e := newElection(t, lockenv.Locker(t, nil), name)
		wg.Go(func() {
			for range 10 {
				l, err := e.Campaign(testenv.Timeout(t, 30*time.Second), string(rune('a'+i)))
				if err != nil {
					t.Error(err)
					return
				}
				l.Resign(t.Context())
			}
		})
	}
	wg.Wait()
	final, err := newElection(t, lockenv.Locker(t, nil), name).Campaign(testenv.Timeout(t, 10*time.Second), "final")
	if err != nil {
		t.Fatal(err)
	}
	want := election.Leader{Value: "final", Term: final.Term()}
	testenv.Eventually(t, 5*time.Second, "the last value observed is the leader", func() bool {
		l := last.Load()
		return l != nil && *l == want
	})
	cancel()
	<-observed
	final.Resign(t.Context())
}
