package election_test

import (
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/dlock-go/dlock"
	"github.com/dlock-go/dlock/election"
	"github.com/dlock-go/dlock/internal/testenv"
	"github.com/dlock-go/dlock/internal/testenv/lockenv"
)

// Eight Resign calls of one Leadership at once: every one returns nil (one
// resigned, the others find it done), and Err says resigned, never lost.
func TestConcurrentResigns(t *testing.T) {
	t.Parallel()
	locker := lockenv.Locker(t, nil)
	for round := range 50 {
		e := newElection(t, locker, testenv.NewKey(t))
		lead, err := e.Campaign(testenv.Timeout(t, 10*time.Second), "me")
		if err != nil {
			t.Fatal(err)
		}
		errs := make([]error, 8)
		start := make(chan struct{})
		var wg sync.WaitGroup
		for i := range errs {
			wg.Go(func() {
				<-start
				errs[i] = lead.Resign(testenv.Timeout(t, 10*time.Second))
			})
		}
		close(start)
		wg.Wait()
		for i, err := range errs {
			if err != nil {
				t.Errorf("round %d: Resign %d = %v, want nil", round, i, err)
			}
		}
		if err := lead.Err(); !errors.Is(err, election.ErrResigned) || errors.Is(err, dlock.ErrLockLost) {
			t.Fatalf("round %d: Err = %v, want ErrResigned", round, err)
		}
	}
}
