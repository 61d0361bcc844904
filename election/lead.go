package election

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/dlock-go/dlock"
)

// Lead keeps fn running on one caller of the election at a time: it
// campaigns with value, runs fn while this caller leads, with a context
// that is cancelled when the leadership is lost, and campaigns again after
// a loss, until ctx ends or fn returns by itself.
//
// When fn returns while this caller still leads, Lead resigns and returns
// fn's error (nil included). A panic of fn resigns, then goes on up.
//
// When ctx ends, Lead resigns if it leads, and then:
//   - if ctx was cancelled (context.Canceled, whatever its cause), which is
//     a shutdown, as by signal.NotifyContext on SIGTERM, Lead returns nil,
//     or fn's error if fn returned one that is not the context's;
//   - if its deadline passed, Lead returns an error wrapping
//     context.DeadlineExceeded (and the cause, if one was set), and the
//     last failure of Redis if its campaigns were failing then (or fn's
//     error, if fn returned one that is not the context's).
//
// An error of Redis while campaigning (unreachable, paused, failing over)
// is retried after a pause that grows up to a lease, and each one is
// logged (WithLogger) with its error, so that a Lead that cannot reach
// Redis is not silent; an error that retrying cannot mend (dlock.ErrClosed,
// ErrInvalid, ...) is returned at once. Whatever go-redis resends while
// Redis is paused, Lead leads in one term at a time (see Campaign).
func Lead(ctx context.Context, e *Election, value string, fn func(ctx context.Context) error) error {
	switch {
	case e == nil:
		return fmt.Errorf("%w: Lead of a nil Election", ErrInvalid)
	case e.usable() != nil:
		return e.usable()
	case fn == nil:
		return fmt.Errorf("%w: Lead with a nil function", ErrInvalid)
	}
	var failed error // the last campaign error retried, until one succeeds
	failures := 0
	pause := time.Duration(0)
	for {
		l, err := e.Campaign(ctx, value)
		switch {
		case err == nil:
			if failures > 0 {
				e.log().Info("election: campaign succeeded after failures",
					slog.String("election", e.name), slog.Int("failures", failures))
			}
			failed, failures, pause = nil, 0, 0
		case ctx.Err() != nil:
			return e.stopped(ctx, err, failed)
		case !redisFailed(err):
			return err
		default:
			failed = err
			failures++
			pause = min(max(2*pause, 10*time.Millisecond), e.cfg.ttl)
			e.log().Warn("election: campaign failed; retrying",
				slog.String("election", e.name), slog.Int("failures", failures),
				slog.Duration("pause", pause), slog.Any("err", err))
			if !sleep(ctx, pause) {
				return e.stopped(ctx, nil, failed)
			}
			continue
		}
		lost, err := e.lead(ctx, l, fn)
		if !lost {
			return err
		}
		e.log().Warn("election: leadership lost; campaigning again",
			slog.String("election", e.name), slog.Int64("term", l.Term()), slog.Any("err", l.Err()))
	}
}

// lead runs fn for one term, and reports whether the leadership was lost
// (and not ctx ended), in which case Lead campaigns again.
func (e *Election) lead(ctx context.Context, l *Leadership, fn func(ctx context.Context) error) (lost bool, err error) {
	defer func() {
		rctx, cancel := e.cleanupContext(ctx)
		defer cancel()
		_ = l.Resign(rctx) // nil, or lost already, or Redis failed: the lease runs out
	}()
	work, cancel := context.WithCancelCause(context.WithValue(ctx, leadershipKey{}, l))
	defer cancel(nil)
	stop := context.AfterFunc(l.Context(), func() { cancel(context.Cause(l.Context())) })
	defer stop()
	err = fn(work)
	switch {
	case ctx.Err() != nil:
		if err != nil && !isContextError(ctx, err) {
			return false, err // fn's own failure, while it stopped
		}
		return false, e.stopped(ctx, nil, nil)
	case l.Err() != nil:
		return true, err
	}
	return false, err
}

// stopped is what Lead returns when ctx ended: nil for a cancellation (a
// shutdown); for a deadline, an error wrapping the context's error and its
// cause, or err (what Campaign returned, if it was running), and failed
// (the last failure of Redis that Lead retried).
func (e *Election) stopped(ctx context.Context, err, failed error) error {
	if errors.Is(ctx.Err(), context.Canceled) {
		return nil
	}
	if err == nil {
		err = fmt.Errorf("election %q: %w", e.name, ctx.Err())
		if cause := context.Cause(ctx); !errors.Is(cause, ctx.Err()) {
			err = fmt.Errorf("%w: %w", err, cause)
		}
	}
	if failed != nil && !errors.Is(err, failed) {
		err = fmt.Errorf("%w; the last campaign failed: %w", err, failed)
	}
	return err
}

// isContextError reports whether err is ctx's own error, or its cause.
func isContextError(ctx context.Context, err error) bool {
	return errors.Is(err, ctx.Err()) || errors.Is(err, context.Cause(ctx))
}

type leadershipKey struct{}

// FromContext returns the Leadership under which Lead runs its function,
// from the context the function was given, for instance to pass its Term
// to what the leader writes. It reports false for any other context.
func FromContext(ctx context.Context) (*Leadership, bool) {
	l, ok := ctx.Value(leadershipKey{}).(*Leadership)
	return l, ok
}

// redisFailed reports whether err is a failure to reach Redis, which may
// mend, rather than a misuse or a closed Client.
func redisFailed(err error) bool {
	var node *dlock.NodeError
	var quorum *dlock.QuorumError
	return errors.As(err, &node) || errors.As(err, &quorum)
}
