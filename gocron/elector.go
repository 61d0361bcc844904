package dlockgocron

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/go-co-op/gocron/v2"

	"github.com/dlock-go/dlock/election"
)

// ErrNotLeader is what IsLeader returns while this scheduler does not lead.
var ErrNotLeader = errors.New("dlockgocron: not the leader")

// Elector is a gocron.Elector backed by an election: the scheduler that
// leads the election runs the jobs.
type Elector struct {
	leading atomic.Pointer[election.Leadership]
	stopped atomic.Pointer[error] // why campaigning stopped for good
	cancel  context.CancelFunc
	wg      sync.WaitGroup
}

var _ gocron.Elector = (*Elector)(nil)

// NewElector starts campaigning in e with value (see election.Lead), in a
// goroutine of its own that Close stops, and returns at once: IsLeader
// returns ErrNotLeader until this Elector leads.
func NewElector(e *election.Election, value string) *Elector {
	ctx, cancel := context.WithCancel(context.Background())
	el := &Elector{cancel: cancel}
	el.wg.Go(func() {
		err := election.Lead(ctx, e, value, func(ctx context.Context) error {
			l, _ := election.FromContext(ctx)
			el.leading.Store(l)
			defer el.leading.Store(nil)
			<-ctx.Done()
			return nil
		})
		if ctx.Err() == nil { // a misuse, or its dlock Client was closed
			err = fmt.Errorf("dlockgocron: no more campaigning: %w", err)
			el.stopped.Store(&err)
		}
	})
	return el
}

// IsLeader returns nil while this Elector leads, and an error wrapping
// ErrNotLeader otherwise (or why campaigning stopped, such as
// dlock.ErrClosed). It answers from local state, without a round trip: a
// leadership whose lease is lost stops counting at once.
func (el *Elector) IsLeader(context.Context) error {
	if l := el.leading.Load(); l != nil && l.Err() == nil {
		return nil
	}
	if err := el.stopped.Load(); err != nil {
		return *err
	}
	return ErrNotLeader
}

// Leadership returns the current leadership, for its Term, or nil while
// this Elector does not lead.
func (el *Elector) Leadership() *election.Leadership {
	if l := el.leading.Load(); l != nil && l.Err() == nil {
		return l
	}
	return nil
}

// Close stops campaigning, resigns if this Elector leads, and waits for
// its goroutine to end. It always returns nil.
func (el *Elector) Close() error {
	el.cancel()
	el.wg.Wait()
	return nil
}
