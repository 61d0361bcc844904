package dlockgocron_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/go-co-op/gocron/v2"

	"github.com/dlock-go/dlock"
	"github.com/dlock-go/dlock/election"
	dlockgocron "github.com/dlock-go/dlock/gocron"
	"github.com/dlock-go/dlock/internal/testenv"
)

// toldElector wraps an Elector to tell the test when a firing is skipped;
// one that runs tells it from the job (see startHosts).
type toldElector struct {
	*dlockgocron.Elector
	events chan<- string
}

func (e toldElector) IsLeader(ctx context.Context) error {
	err := e.Elector.IsLeader(ctx)
	if err != nil {
		e.events <- "skipped"
	}
	return err
}

// leader waits until exactly one of electors leads, and returns its index.
// Two leading at once fails the test.
func leader(t *testing.T, electors []*dlockgocron.Elector) int {
	t.Helper()
	leading := -1
	testenv.Eventually(t, 10*time.Second, "one elector to lead", func() bool {
		n := 0
		for i, e := range electors {
			if e.IsLeader(t.Context()) == nil {
				leading, n = i, n+1
			}
		}
		if n > 1 {
			t.Fatalf("%d electors lead at once", n)
		}
		return n == 1
	})
	return leading
}

// Three schedulers with skewed clocks and an Elector each: every minute
// runs once, on the leader; when the leader closes its Elector, another
// scheduler takes over.
func TestElectorRunsEachSlotOnce(t *testing.T) {
	t.Parallel()
	name := testName(t)
	runs := &ledger{runs: map[time.Time][]string{}}
	var electors []*dlockgocron.Elector
	hosts := startHosts(t, name, runs, func(h *host) []gocron.SchedulerOption {
		// A short lease: a candidate that could not listen for releases on
		// a loaded machine polls within a lease, and the test stays short.
		e := dlockgocron.NewElector(newElection(t, newLocker(t), name, election.WithTTL(time.Second)), h.name)
		t.Cleanup(func() { e.Close() })
		electors = append(electors, e)
		h.ran = func() { h.events <- "ran" }
		return []gocron.SchedulerOption{gocron.WithDistributedElector(toldElector{e, h.events})}
	})
	first := leader(t, electors)
	fire(t, hosts, 4, func(slot int) {
		if slot == 1 {
			electors[first].Close() // resigns: another takes over at once
			if second := leader(t, electors); second == first {
				t.Errorf("the closed elector still leads")
			}
		}
	})
	runs.check(t, 4)
}

// IsLeader answers from local state, and an Elector whose dlock Client is
// closed says why it stopped.
func TestElectorClientClosed(t *testing.T) {
	t.Parallel()
	locker := newLocker(t)
	e := dlockgocron.NewElector(newElection(t, locker, testName(t)), "a")
	defer e.Close()
	leader(t, []*dlockgocron.Elector{e})
	if l := e.Leadership(); l == nil || l.Term() <= 0 {
		t.Errorf("Leadership() = %v while leading", l)
	}
	locker.Close()
	testenv.Eventually(t, 10*time.Second, "IsLeader to return ErrClosed once the Client is closed", func() bool {
		return errors.Is(e.IsLeader(t.Context()), dlock.ErrClosed)
	})
	if e.Leadership() != nil {
		t.Error("Leadership() is not nil after the Client closed")
	}
}

// IsLeader answers from local state: no round trip.
func BenchmarkIsLeader(b *testing.B) {
	e := dlockgocron.NewElector(newElection(b, newLocker(b), testName(b)), "a")
	defer e.Close()
	testenv.Eventually(b, 10*time.Second, "the elector to lead", func() bool {
		return e.IsLeader(context.Background()) == nil
	})
	for b.Loop() {
		if err := e.IsLeader(context.Background()); err != nil {
			b.Fatal(err)
		}
	}
}
