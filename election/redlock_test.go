package election_test

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/dlock-go/dlock"
	"github.com/dlock-go/dlock/election"
	"github.com/dlock-go/dlock/internal/testenv"
	"github.com/dlock-go/dlock/redistest"
)

// newRedlock returns a Redlock Client on srvs, closed when the test ends.
func newRedlock(t testing.TB, srvs []*redistest.Server) *dlock.Client {
	t.Helper()
	var nodes []redis.UniversalClient
	for _, s := range srvs {
		nodes = append(nodes, s.Client(testenv.FastFail))
	}
	locker, err := dlock.NewRedlock(nodes, dlock.WithNodeTimeout(500*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { locker.Close() })
	return locker
}

// On a Redlock of three nodes with one down, an election elects, observes,
// hands over on resignation and after a crash, with increasing terms.
func TestRedlockWithANodeDown(t *testing.T) {
	t.Parallel()
	srvs := redistest.NewServers(t, 3)
	name := testenv.NewKey(t)
	crashing := newRedlock(t, srvs)
	a := newElection(t, newRedlock(t, srvs), name, election.WithTTL(500*time.Millisecond))
	b := newElection(t, crashing, name, election.WithTTL(500*time.Millisecond))
	srvs[2].Kill()

	ctx, cancel := context.WithCancel(context.Background())
	observed := newElection(t, newRedlock(t, srvs), name).Observe(ctx)
	defer func() {
		cancel()
		for range observed {
		}
	}()
	if l := next(t, observed); l != (election.Leader{}) {
		t.Fatalf("first value %+v, want the empty seat", l)
	}
	first, err := a.Campaign(testenv.Timeout(t, 10*time.Second), "a")
	if err != nil {
		t.Fatal(err)
	}
	if l, err := b.Leader(t.Context()); err != nil || l != (election.Leader{Value: "a", Term: first.Term()}) {
		t.Errorf("Leader() = %+v, %v; want a in term %d", l, err, first.Term())
	}
	if l := next(t, observed); l.Value != "a" || l.Term != first.Term() {
		t.Errorf("observed %+v, want a in term %d", l, first.Term())
	}
	got := make(chan *election.Leadership, 1)
	go func() {
		l, err := b.Campaign(testenv.Timeout(t, 10*time.Second), "b")
		if err != nil {
			t.Error(err)
		}
		got <- l
	}()
	if err := first.Resign(t.Context()); err != nil {
		t.Fatal(err)
	}
	second := <-got
	if second == nil || second.Term() <= first.Term() {
		t.Fatalf("after a resignation: %v", second)
	}
	for l := next(t, observed); l.Value != "b"; l = next(t, observed) {
		if l.Term != 0 {
			t.Fatalf("observed %+v, want b", l)
		}
	}
	crashing.Close() // b crashes: a takes over when its lease runs out
	third, err := a.Campaign(testenv.Timeout(t, 10*time.Second), "a again")
	if err != nil {
		t.Fatal(err)
	}
	defer third.Resign(context.Background())
	if third.Term() <= second.Term() {
		t.Errorf("term after a crash %d, not above %d", third.Term(), second.Term())
	}
	for l := next(t, observed); l.Value != "a again"; l = next(t, observed) {
		if l.Term != 0 {
			t.Fatalf("observed %+v, want a again", l)
		}
	}
}
