package election_test

import (
	"context"
	"errors"
	"log/slog"
	"syscall"
	"testing"
	"time"

	"github.com/dlock-go/dlock"
	"github.com/dlock-go/dlock/election"
	"github.com/dlock-go/dlock/internal/testenv"
	"github.com/dlock-go/dlock/internal/testenv/lockenv"
	"github.com/dlock-go/dlock/redistest"
)

// expiring returns a context whose deadline passes when expire is called:
// its Err is then context.DeadlineExceeded. A test of what a passed
// deadline returns need not bet on how long Redis takes to fail.
func expiring() (ctx context.Context, expire func()) {
	inner, cancel := context.WithCancelCause(context.Background())
	return deadlineContext{inner}, func() { cancel(context.DeadlineExceeded) }
}

type deadlineContext struct{ context.Context }

func (c deadlineContext) Err() error {
	if c.Context.Err() != nil {
		return context.DeadlineExceeded
	}
	return nil
}

// With nothing listening where Redis should be, Lead logs each failed
// campaign with its error through WithLogger's logger, and when its
// deadline passes returns an error that wraps both the deadline and the
// network's error. (go-redis's default options.)
func TestLeadRedisDownLogsAndReturnsTheCause(t *testing.T) {
	t.Parallel()
	srv := redistest.NewServer(t)
	srv.Kill()
	var log testenv.Logs
	e := newElection(t, lockenv.Locker(t, srv.Client()), testenv.NewKey(t),
		election.WithTTL(100*time.Millisecond), election.WithLogger(slog.New(&log)))
	ctx, expire := expiring()
	defer expire()
	done := make(chan error, 1)
	go func() {
		done <- election.Lead(ctx, e, "p", func(context.Context) error {
			t.Error("fn ran with Redis down")
			return nil
		})
	}()
	testenv.Eventually(t, 30*time.Second, "two failed campaigns logged", func() bool {
		return len(log.Matching(slog.LevelWarn, "campaign failed")) >= 2
	})
	expire()
	err := <-done
	var node *dlock.NodeError
	switch {
	case !errors.Is(err, context.DeadlineExceeded):
		t.Errorf("Lead after its deadline = %v, want context.DeadlineExceeded", err)
	case !errors.As(err, &node):
		t.Errorf("Lead after its deadline = %v, want the dlock.NodeError of the failed campaigns", err)
	case !errors.Is(err, syscall.ECONNREFUSED):
		t.Errorf("Lead after its deadline = %v, want the refused connection", err)
	}
	for _, r := range log.Matching(slog.LevelWarn, "campaign failed") {
		if testenv.Attr(r, "election") != e.Name() {
			t.Errorf("record %q: election = %v, want %q", r.Message, testenv.Attr(r, "election"), e.Name())
		}
		if cause, ok := testenv.Attr(r, "err").(error); !ok || !errors.Is(cause, syscall.ECONNREFUSED) {
			t.Errorf("record %q: err = %v, want the refused connection", r.Message, testenv.Attr(r, "err"))
		}
	}
}

// Without WithLogger, Lead logs through the dlock Client's logger
// (dlock.WithLogger).
func TestLeadLogsThroughTheClientsLogger(t *testing.T) {
	t.Parallel()
	srv := redistest.NewServer(t)
	srv.Kill()
	var log testenv.Logs
	locker := dlock.New(srv.Client(), dlock.WithLogger(slog.New(&log)))
	t.Cleanup(func() { locker.Close() })
	e := newElection(t, locker, testenv.NewKey(t), election.WithTTL(100*time.Millisecond))
	ctx, expire := expiring()
	defer expire()
	done := make(chan error, 1)
	go func() {
		done <- election.Lead(ctx, e, "p", func(context.Context) error {
			t.Error("fn ran with Redis down")
			return nil
		})
	}()
	testenv.Eventually(t, 30*time.Second, "a failed campaign logged through the Client's logger", func() bool {
		return len(log.Matching(slog.LevelWarn, "campaign failed")) >= 1
	})
	expire()
	<-done
}

// Cancelling Lead's context is a shutdown: Lead resigns and returns nil,
// whether it leads or campaigns, unless the work returned an error of its
// own.
func TestLeadShutdownReturnsNil(t *testing.T) {
	t.Parallel()
	name := testenv.NewKey(t)
	e := newElection(t, lockenv.Locker(t, nil), name)
	ctx, cancel := context.WithCancel(context.Background())
	started := make(chan struct{})
	done := make(chan error, 1)
	go func() {
		done <- election.Lead(ctx, e, "leader", func(ctx context.Context) error {
			close(started)
			<-ctx.Done()
			return ctx.Err()
		})
	}()
	<-started

	// A second candidate campaigns while the first leads.
	candidate := newElection(t, lockenv.Locker(t, nil), name)
	cctx, ccancel := context.WithCancelCause(context.Background())
	cdone := make(chan error, 1)
	go func() {
		cdone <- election.Lead(cctx, candidate, "candidate", func(context.Context) error {
			t.Error("the candidate led")
			return nil
		})
	}()
	ccancel(errors.New("SIGTERM"))
	if err := <-cdone; err != nil {
		t.Errorf("Lead cancelled while campaigning = %v, want nil", err)
	}

	cancel()
	if err := <-done; err != nil {
		t.Errorf("Lead cancelled while leading = %v, want nil", err)
	}
	if _, err := e.Leader(t.Context()); !errors.Is(err, election.ErrNoLeader) {
		t.Errorf("Leader after the shutdown = %v, want ErrNoLeader: Lead resigns", err)
	}

	// The work's own failure is not hidden by the shutdown.
	failed := errors.New("flush failed")
	ctx, cancel = context.WithCancel(context.Background())
	go func() {
		done <- election.Lead(ctx, e, "leader", func(context.Context) error {
			cancel()
			return failed
		})
	}()
	if err := <-done; !errors.Is(err, failed) {
		t.Errorf("Lead whose work failed during the shutdown = %v, want the work's error", err)
	}
}

// Lead's deadline is no shutdown: Lead resigns and returns an error
// wrapping context.DeadlineExceeded.
func TestLeadDeadlineReturnsIt(t *testing.T) {
	t.Parallel()
	e := newElection(t, lockenv.Locker(t, nil), testenv.NewKey(t))
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	err := election.Lead(ctx, e, "leader", func(ctx context.Context) error {
		<-ctx.Done()
		return ctx.Err()
	})
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Lead after its deadline = %v, want context.DeadlineExceeded", err)
	}
	if _, err := e.Leader(t.Context()); !errors.Is(err, election.ErrNoLeader) {
		t.Errorf("Leader after the deadline = %v, want ErrNoLeader: Lead resigns", err)
	}
}

// WithLogger(nil) is an invalid option, not a panic: New returns it.
func TestWithLoggerNil(t *testing.T) {
	t.Parallel()
	if _, err := election.New(lockenv.Locker(t, nil), testenv.NewKey(t), election.WithLogger(nil)); !errors.Is(err, election.ErrInvalid) {
		t.Errorf("New WithLogger(nil) = %v, want ErrInvalid", err)
	}
}
