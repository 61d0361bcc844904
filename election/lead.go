package election

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/dlock-go/dlock"
)

// Lead keeps fn running on one caller of the election at a time: it
// campaigns with value, runs fn while this caller leads, with a context
// that is cancelled when the leadership is lost, and campaigns again after
// a loss, until ctx ends or fn returns by itself.
//
// When fn returns while this caller still leads, Lead resigns and returns
// fn's error (nil included). When ctx ends, Lead resigns if it leads and
// returns an error that wraps the context's error. An error of Redis while
// campaigning is retried after a pause that grows up to a lease; one that
// retrying cannot mend (dlock.ErrClosed, ErrInvalid, ...) is returned.
// A panic of fn resigns, then goes on up.
func Lead(ctx context.Context, e *Election, value string, fn func(ctx context.Context) error) error {
	switch {
	case e == nil:
		return fmt.Errorf("%w: Lead of a nil Election", ErrInvalid)
	case e.err != nil:
		return e.err
	case fn == nil:
		return fmt.Errorf("%w: Lead with a nil function", ErrInvalid)
	}
	pause := time.Duration(0)
	for {
		l, err := e.Campaign(ctx, value)
		switch {
		case err == nil:
			pause = 0
		case ctx.Err() != nil:
			return err
		case !redisFailed(err):
			return err
		default:
			pause = min(max(2*pause, 10*time.Millisecond), e.cfg.ttl)
			if !sleep(ctx, pause) {
				return fmt.Errorf("election %q: %w", e.name, context.Cause(ctx))
			}
			continue
		}
		lost, err := e.lead(ctx, l, fn)
		if !lost {
			return err
		}
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
		return false, fmt.Errorf("election %q: %w", e.name, context.Cause(ctx))
	case l.Err() != nil:
		return true, err
	}
	return false, err
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
