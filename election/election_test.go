package election_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/dlock-go/dlock"
	"github.com/dlock-go/dlock/election"
	"github.com/dlock-go/dlock/internal/testenv"
	"github.com/dlock-go/dlock/internal/testenv/lockenv"
)

// A candidate waits while another leads, and takes over when it resigns,
// with a higher term; the one that resigned says so.
func TestResignWakesACandidate(t *testing.T) {
	t.Parallel()
	name := testenv.NewKey(t)
	a := newElection(t, lockenv.Locker(t, nil), name)
	b := newElection(t, lockenv.Locker(t, nil), name)
	first, err := a.Campaign(testenv.Timeout(t, 10*time.Second), "a")
	if err != nil {
		t.Fatal(err)
	}
	if first.Term() <= 0 || first.Value() != "a" || first.Err() != nil {
		t.Fatalf("leadership: term %d, value %q, err %v", first.Term(), first.Value(), first.Err())
	}
	if l, err := b.Leader(t.Context()); err != nil || l != (election.Leader{Value: "a", Term: first.Term()}) {
		t.Errorf("Leader() = %+v, %v; want a in term %d", l, err, first.Term())
	}
	got := make(chan *election.Leadership, 1)
	go func() {
		l, err := b.Campaign(testenv.Timeout(t, 30*time.Second), "b") // the lease is 10s: only the resignation is quick
		if err != nil {
			t.Error(err)
		}
		got <- l
	}()
	if err := first.Resign(t.Context()); err != nil {
		t.Fatal(err)
	}
	second := <-got
	if second == nil {
		t.FailNow()
	}
	defer second.Resign(context.Background())
	if second.Term() <= first.Term() {
		t.Errorf("term after a resignation %d, not above %d", second.Term(), first.Term())
	}
	if !closed(first.Done()) || !errors.Is(first.Err(), election.ErrResigned) {
		t.Errorf("the resigned leadership: done %v, err %v", closed(first.Done()), first.Err())
	}
	if err := first.Resign(t.Context()); err != nil {
		t.Errorf("a second Resign = %v, want nil", err)
	}
	if cause := context.Cause(first.Context()); !errors.Is(cause, election.ErrResigned) {
		t.Errorf("the resigned leadership's context ended with %v", cause)
	}
	if l, err := a.Leader(t.Context()); err != nil || l.Value != "b" || l.Term != second.Term() {
		t.Errorf("Leader() = %+v, %v; want b in term %d", l, err, second.Term())
	}
}

// Three candidates take turns many times: one leader at a time, and every
// term higher than the one before.
func TestOneLeaderAtATime(t *testing.T) {
	t.Parallel()
	name := testenv.NewKey(t)
	const candidates, termsEach = 3, 15
	var mu sync.Mutex
	leaders, lastTerm, terms := 0, int64(0), 0
	var wg sync.WaitGroup
	for i := range candidates {
		e := newElection(t, lockenv.Locker(t, nil), name)
		wg.Go(func() {
			for range termsEach {
				l, err := e.Campaign(testenv.Timeout(t, 30*time.Second), string(rune('a'+i)))
				if err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				leaders++
				if leaders != 1 || l.Term() <= lastTerm {
					t.Errorf("term %d began with %d leaders after term %d", l.Term(), leaders, lastTerm)
				}
				lastTerm = l.Term()
				terms++
				mu.Unlock()
				time.Sleep(time.Millisecond) // lead a little
				mu.Lock()
				leaders--
				mu.Unlock()
				if err := l.Resign(t.Context()); err != nil {
					t.Error(err)
				}
			}
		})
	}
	wg.Wait()
	if terms != candidates*termsEach {
		t.Errorf("%d terms, want %d", terms, candidates*termsEach)
	}
}

// A leader whose process dies (its Client closed without resigning) is
// replaced when its lease runs out, with a higher term.
func TestCrashedLeaderIsReplaced(t *testing.T) {
	t.Parallel()
	name := testenv.NewKey(t)
	crashing := lockenv.Locker(t, nil)
	a := newElection(t, crashing, name, election.WithTTL(300*time.Millisecond))
	b := newElection(t, lockenv.Locker(t, nil), name, election.WithTTL(300*time.Millisecond))
	first, err := a.Campaign(testenv.Timeout(t, 10*time.Second), "a")
	if err != nil {
		t.Fatal(err)
	}
	crashing.Close()
	<-first.Done()
	if !errors.Is(first.Err(), dlock.ErrLockLost) {
		t.Errorf("the crashed leader's Err() = %v, want ErrLockLost", first.Err())
	}
	if err := first.Resign(t.Context()); !errors.Is(err, dlock.ErrLockLost) {
		t.Errorf("Resign after the loss = %v, want ErrLockLost", err)
	}
	second, err := b.Campaign(testenv.Timeout(t, 10*time.Second), "b")
	if err != nil {
		t.Fatal(err)
	}
	defer second.Resign(context.Background())
	if second.Term() <= first.Term() {
		t.Errorf("term after a crash %d, not above %d", second.Term(), first.Term())
	}
}

// A candidate whose context ends gets an error that says both: the seat
// was taken, and the context ended.
func TestCampaignContextEnds(t *testing.T) {
	t.Parallel()
	name := testenv.NewKey(t)
	l, err := newElection(t, lockenv.Locker(t, nil), name).Campaign(testenv.Timeout(t, 10*time.Second), "a")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Resign(context.Background())
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	_, err = newElection(t, lockenv.Locker(t, nil), name).Campaign(ctx, "b")
	if !errors.Is(err, dlock.ErrNotObtained) || !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Campaign until a deadline = %v, want ErrNotObtained and DeadlineExceeded", err)
	}
}

// A leadership lost under the leader's feet (an operator deleted the seat)
// ends its context with ErrLockLost as the cause.
func TestLeadershipLost(t *testing.T) {
	t.Parallel()
	name := testenv.NewKey(t)
	locker := lockenv.Locker(t, nil)
	l, err := newElection(t, locker, name, election.WithTTL(300*time.Millisecond)).Campaign(testenv.Timeout(t, 10*time.Second), "a")
	if err != nil {
		t.Fatal(err)
	}
	ctx := l.Context()
	if _, err := locker.ForceRelease(t.Context(), name); err != nil {
		t.Fatal(err)
	}
	<-ctx.Done()
	if !errors.Is(context.Cause(ctx), dlock.ErrLockLost) || !errors.Is(l.Err(), dlock.ErrLockLost) {
		t.Errorf("cause %v, Err %v; want ErrLockLost", context.Cause(ctx), l.Err())
	}
}

func TestNoLeader(t *testing.T) {
	t.Parallel()
	if _, err := newElection(t, lockenv.Locker(t, nil), testenv.NewKey(t)).Leader(t.Context()); !errors.Is(err, election.ErrNoLeader) {
		t.Errorf("Leader() of an empty seat = %v, want ErrNoLeader", err)
	}
}

func TestInvalid(t *testing.T) {
	t.Parallel()
	locker := lockenv.Locker(t, nil)
	ctx := testenv.Timeout(t, 10*time.Second)
	for what, newIt := range map[string]func() (*election.Election, error){
		"nil Client":   func() (*election.Election, error) { return election.New(nil, "x") },
		"empty name":   func() (*election.Election, error) { return election.New(locker, "") },
		"zero ttl":     func() (*election.Election, error) { return election.New(locker, "x", election.WithTTL(0)) },
		"negative ttl": func() (*election.Election, error) { return election.New(locker, "x", election.WithTTL(-time.Second)) },
		"nil option":   func() (*election.Election, error) { return election.New(locker, "x", nil) },
		"nil logger":   func() (*election.Election, error) { return election.New(locker, "x", election.WithLogger(nil)) },
		"bad then valid": func() (*election.Election, error) {
			return election.New(locker, "x", election.WithTTL(0), election.WithTTL(time.Second))
		},
	} {
		if e, err := newIt(); !errors.Is(err, election.ErrInvalid) || e != nil {
			t.Errorf("%s: New = %v, %v, want nil, ErrInvalid", what, e, err)
		}
	}
	// An Election not made by New fails every call, without a panic.
	zero := new(election.Election)
	if _, err := zero.Campaign(ctx, "v"); !errors.Is(err, election.ErrInvalid) {
		t.Errorf("Campaign of a zero Election = %v, want ErrInvalid", err)
	}
	if _, err := zero.Leader(ctx); !errors.Is(err, election.ErrInvalid) {
		t.Errorf("Leader of a zero Election = %v, want ErrInvalid", err)
	}
	if _, ok := <-zero.Observe(ctx); ok {
		t.Errorf("Observe's channel of a zero Election is open")
	}
	if err := election.Lead(ctx, zero, "v", func(context.Context) error { return nil }); !errors.Is(err, election.ErrInvalid) {
		t.Errorf("Lead of a zero Election = %v, want ErrInvalid", err)
	}
	e := newElection(t, locker, testenv.NewKey(t))
	if err := election.Lead(ctx, e, "v", nil); !errors.Is(err, election.ErrInvalid) {
		t.Errorf("Lead with a nil function = %v, want ErrInvalid", err)
	}
	if err := election.Lead(ctx, nil, "v", func(context.Context) error { return nil }); !errors.Is(err, election.ErrInvalid) {
		t.Errorf("Lead of a nil Election = %v, want ErrInvalid", err)
	}
	if _, err := e.Campaign(ctx, string(make([]byte, dlock.MaxValueLen+1))); !errors.Is(err, dlock.ErrInvalidOption) {
		t.Errorf("Campaign with a value over dlock.MaxValueLen = %v, want dlock.ErrInvalidOption", err)
	}
}

// A closed Client ends every call.
func TestClosedClient(t *testing.T) {
	t.Parallel()
	locker := lockenv.Locker(t, nil)
	locker.Close()
	e := newElection(t, locker, testenv.NewKey(t))
	ctx := testenv.Timeout(t, 10*time.Second)
	if _, err := e.Campaign(ctx, "v"); !errors.Is(err, dlock.ErrClosed) {
		t.Errorf("Campaign = %v, want ErrClosed", err)
	}
	if err := election.Lead(ctx, e, "v", func(context.Context) error { return nil }); !errors.Is(err, dlock.ErrClosed) {
		t.Errorf("Lead = %v, want ErrClosed", err)
	}
	for range e.Observe(ctx) {
	}
}
