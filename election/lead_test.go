package election_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/dlock-go/dlock"
	"github.com/dlock-go/dlock/election"
	"github.com/dlock-go/dlock/internal/testenv"
	"github.com/dlock-go/dlock/internal/testenv/lockenv"
	"github.com/dlock-go/dlock/redistest"
)

// Two processes Lead the same work. When the leader loses the seat (an
// operator deletes it), its work is cancelled with the cause ErrLockLost,
// and a leader is elected again, in a higher term; when ctx ends, both
// return. (Deleting the seat is no clean loss: the next leader starts at
// once, while the old one learns of it at its next renewal. One leader at
// a time is tested by TestOneLeaderAtATime.)
func TestLeadAcrossLosses(t *testing.T) {
	t.Parallel()
	name := testenv.NewKey(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var lost atomic.Int32
	terms := make(chan int64, 10)
	work := func(ctx context.Context) error {
		l, ok := election.FromContext(ctx)
		if !ok {
			t.Error("no Leadership in the work's context")
			return nil
		}
		terms <- l.Term()
		<-ctx.Done()
		if errors.Is(context.Cause(ctx), dlock.ErrLockLost) {
			lost.Add(1)
		}
		return ctx.Err()
	}
	var wg sync.WaitGroup
	errs := make([]error, 2)
	for i := range errs {
		e := newElection(t, lockenv.Locker(t, nil), name, election.WithTTL(time.Second))
		wg.Go(func() { errs[i] = election.Lead(ctx, e, "p", work) })
	}
	operator := lockenv.Locker(t, nil)
	var last int64
	for round := range 3 {
		select {
		case term := <-terms:
			if term <= last {
				t.Errorf("round %d: term %d after %d", round, term, last)
			}
			last = term
		case <-time.After(10 * time.Second):
			t.Fatalf("round %d: no leader within 10s", round)
		}
		if round < 2 {
			if _, err := operator.ForceRelease(t.Context(), name); err != nil {
				t.Fatal(err)
			}
		}
	}
	testenv.Eventually(t, 10*time.Second, "both losses told to the work", func() bool { return lost.Load() == 2 })
	cancel()
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Errorf("Lead after ctx was cancelled = %v, want nil: a shutdown", err)
		}
	}
}

// When the work returns by itself, Lead resigns and returns its error.
func TestLeadReturnsWhenTheWorkDoes(t *testing.T) {
	t.Parallel()
	name := testenv.NewKey(t)
	e := newElection(t, lockenv.Locker(t, nil), name)
	failed := errors.New("work failed")
	if err := election.Lead(testenv.Timeout(t, 10*time.Second), e, "p", func(context.Context) error { return failed }); !errors.Is(err, failed) {
		t.Errorf("Lead = %v, want the work's error", err)
	}
	if _, err := e.Leader(t.Context()); !errors.Is(err, election.ErrNoLeader) {
		t.Errorf("Leader after Lead returned = %v, want ErrNoLeader: Lead resigns", err)
	}
	func() {
		defer func() {
			if recover() == nil {
				t.Error("the work's panic did not go up")
			}
		}()
		election.Lead(testenv.Timeout(t, 10*time.Second), e, "p", func(context.Context) error { panic("boom") })
	}()
	if _, err := e.Leader(t.Context()); !errors.Is(err, election.ErrNoLeader) {
		t.Errorf("Leader after a panic = %v, want ErrNoLeader: Lead resigns", err)
	}
}

// Lead campaigns through a Redis that is down for a while.
func TestLeadRetriesRedisFailures(t *testing.T) {
	t.Parallel()
	srv := redistest.NewServer(t)
	e := newElection(t, dlockOn(t, srv), testenv.NewKey(t), election.WithTTL(time.Second))
	srv.Kill()
	started := make(chan struct{})
	done := make(chan error, 1)
	go func() {
		done <- election.Lead(testenv.Timeout(t, 30*time.Second), e, "p", func(context.Context) error {
			close(started)
			return nil
		})
	}()
	srv.Start() // meanwhile, Lead's campaigns fail: the server is down

	<-started
	if err := <-done; err != nil {
		t.Errorf("Lead = %v", err)
	}
}

// A campaign on a Redis that is down fails at once, with the node's error.
func TestCampaignRedisDown(t *testing.T) {
	t.Parallel()
	srv := redistest.NewServer(t)
	e := newElection(t, dlockOn(t, srv), testenv.NewKey(t))
	srv.Kill()
	_, err := e.Campaign(testenv.Timeout(t, 10*time.Second), "p")
	var node *dlock.NodeError
	if !errors.As(err, &node) || !errors.Is(err, syscall.ECONNREFUSED) {
		t.Errorf("Campaign on a dead Redis = %v, want a dlock.NodeError wrapping the refused connection", err)
	}
}
