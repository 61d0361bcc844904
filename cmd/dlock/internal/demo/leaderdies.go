package demo

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/dlock-go/dlock"
	"github.com/dlock-go/dlock/election"
)

// Three instances of a service of which one must lead
// (active/standby), each with its own dlock Client, keep a scheduler running
// with election.Lead. The leader dies: its Client is closed without a
// resignation, as when its process is killed. Another instance takes over
// when the dead leader's lease runs out, in a higher term, and two never
// lead at once.
const (
	leaderLease      = time.Second      // short, for the demo: the takeover takes about this long
	leaderCandidates = 3                // instances
	leaderWait       = 10 * time.Second // how long the case waits for a leader, at most
)

func leaderDies(ctx context.Context, d *env) result {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	name := d.key("election:scheduler")
	lockers := make([]*dlock.Client, leaderCandidates)
	for i := range lockers {
		lockers[i] = dlock.New(d.rdb)
		defer lockers[i].Close() // again, for the dead one: Close is idempotent
	}
	var seats seatCount
	var wg sync.WaitGroup
	defer wg.Wait() // after cancel: the live candidates resign
	defer cancel()
	for i, locker := range lockers {
		e, err := election.New(locker, name, election.WithTTL(leaderLease))
		if err != nil {
			return failed(err)
		}
		wg.Go(func() {
			_ = election.Lead(ctx, e, candidateName(i), func(ctx context.Context) error {
				seats.sit()
				defer seats.leave()
				<-ctx.Done() // the scheduler's work, until the leadership ends
				return nil
			})
		})
	}

	watchCtx, stopWatch := context.WithTimeout(ctx, leaderWait)
	defer stopWatch()
	watcher, err := election.New(d.locker, name, election.WithTTL(leaderLease))
	if err != nil {
		return failed(err)
	}
	leaders := watcher.Observe(watchCtx)
	first, ok := nextLeader(leaders, "")
	if !ok {
		return failed(fmt.Errorf("no leader within %v", leaderWait))
	}
	dead := -1
	for i := range lockers {
		if candidateName(i) == first.Value {
			dead = i
		}
	}
	if dead < 0 {
		return failed(fmt.Errorf("the leader %q is none of the candidates", first.Value))
	}
	died := time.Now()
	lockers[dead].Close() // the leader's process dies: no resignation
	next, ok := nextLeader(leaders, first.Value)
	if !ok {
		return failed(fmt.Errorf("no other leader within %v of the first dying", leaderWait))
	}
	took := time.Since(died).Round(10 * time.Millisecond)
	happened := fmt.Sprintf("%d candidates: %s led, died without resigning;\n%s took over %v later (the lease: %v);\nterms %d (%s),\nthen %d (%s)",
		leaderCandidates, first.Value, next.Value, took, leaderLease, first.Term, termTime(first.Term), next.Term, termTime(next.Term))
	var problems []string
	if next.Term <= first.Term {
		problems = append(problems, fmt.Sprintf("the new term %d is not above %d", next.Term, first.Term))
	}
	if n := seats.most(); n > 1 {
		problems = append(problems, fmt.Sprintf("%d candidates led at once", n))
	}
	return verdict(happened, "one leader at a time, in a new term", problems)
}

// candidateName is the value candidate i campaigns with.
func candidateName(i int) string {
	return fmt.Sprintf("node-%d", i+1)
}

// nextLeader returns the next leader from leaders whose value is not
// other, skipping an empty seat; false if the channel closed first.
func nextLeader(leaders <-chan election.Leader, other string) (election.Leader, bool) {
	for l := range leaders {
		if l.Term != 0 && l.Value != other {
			return l, true
		}
	}
	return election.Leader{}, false
}

// seatCount counts the candidates that lead at once, as each sees it.
type seatCount struct {
	mu       sync.Mutex
	now, max int
}

func (s *seatCount) sit() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.now++
	s.max = max(s.max, s.now)
}

func (s *seatCount) leave() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.now--
}

func (s *seatCount) most() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.max
}

// termTime is the time a term stands for: a term is a fence, at least the
// server's time in microseconds when its leader was elected, and nearly
// always that time.
func termTime(term int64) string {
	return time.UnixMicro(term).UTC().Format("15:04:05.000 MST")
}
