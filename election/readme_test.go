package election_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/dlock-go/dlock"
	"github.com/dlock-go/dlock/election"
	"github.com/dlock-go/dlock/internal/testenv"
	"github.com/dlock-go/dlock/internal/testenv/lockenv"
	"github.com/dlock-go/dlock/redistest"
)

// readmeLead runs the code that docs/packages.md shows (its body); the package's
// own examples are in example_test.go.
func readmeLead(ctx context.Context, locker *dlock.Client, hostname string, scheduleInvoices func(context.Context, int64) error) error {
	e, err := election.New(locker, "billing-scheduler") // the seat is the lock "billing-scheduler"
	if err != nil {
		return err // election.ErrInvalid: an empty name or an invalid option
	}
	err = election.Lead(ctx, e, hostname, func(ctx context.Context) error {
		l, _ := election.FromContext(ctx)
		return scheduleInvoices(ctx, l.Term()) // ctx ends if leadership is lost; Term fences writes
	})
	return err
}

// Two hosts lead in turn: the second takes over when the first's work ends.
func TestReadmeLead(t *testing.T) {
	t.Parallel()
	rdb := redistest.NewServer(t).Client() // a server of its own: the seat's name is the docs'
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	var leading atomic.Int32
	var terms []int64
	var mu sync.Mutex
	var wg sync.WaitGroup
	for _, host := range []string{"a", "b"} {
		locker := lockenv.Locker(t, rdb)
		wg.Go(func() {
			err := readmeLead(ctx, locker, host, func(_ context.Context, term int64) error {
				if leading.Add(1) != 1 {
					t.Error("two leaders")
				}
				defer leading.Add(-1)
				mu.Lock()
				terms = append(terms, term)
				mu.Unlock()
				return nil // done: resign, and let the other lead
			})
			if err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	if len(terms) != 2 || terms[1] <= terms[0] {
		t.Errorf("terms %v, want two, increasing", terms)
	}
}

// docCode is the code of the package's doc (doc.go), as written, so that
// it compiles; TestDocCodeIsTested checks that the two agree.
func docCode(ctx context.Context, locker *dlock.Client, hostname string, schedule func(context.Context) error) error {
	e, err := election.New(locker, "billing-scheduler")
	if err != nil {
		return err // an empty name or an invalid option: election.ErrInvalid
	}
	err = election.Lead(ctx, e, hostname, func(ctx context.Context) error {
		return schedule(ctx) // runs on one process at a time; ctx ends on loss
	})
	return err
}

func TestDocCodeIsTested(t *testing.T) {
	_ = docCode
	testenv.DocCodeIsTested(t, 1)
}
