package dlock

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/dlock-go/dlock/internal/door"
	"github.com/dlock-go/dlock/observe"
)

// This declaration fills internal/door, the root's door for its sibling packages
// (idempotency, cachefill, election): features only they need, kept off
// the public surface. It is a variable declaration rather than an init
// function so that the one side effect of initializing the package is
// visible here, in one place; see internal/door for why it runs before any
// caller of the door.
var _ = door.Lend(door.Lent{
	WithGuard: func(key string) any { return withGuard(key) },
	ReleaseStoring: func(ctx context.Context, lock any, key string, value []byte, ttl time.Duration) error {
		l, ok := lock.(*Lock)
		if !ok || l == nil {
			return fmt.Errorf("%w: ReleaseStoring of a %T, not a *dlock.Lock", ErrInvalidOption, lock)
		}
		return l.releaseStoring(ctx, key, value, ttl)
	},
	Lifetime: func(lock any) context.Context {
		l, ok := lock.(*Lock)
		if !ok || l == nil {
			ctx, cancel := context.WithCancelCause(context.Background())
			cancel(fmt.Errorf("%w: Lifetime of a %T, not a *dlock.Lock", ErrInvalidOption, lock))
			return ctx
		}
		return l.h.Lifetime()
	},
	WaitReleaseOf: func(ctx context.Context, client any, key, fingerprint string) error {
		c, ok := client.(*Client)
		if !ok || c == nil {
			return fmt.Errorf("%w: WaitReleaseOf on a %T, not a *dlock.Client", ErrInvalidOption, client)
		}
		if fingerprint == "" {
			return fmt.Errorf("%w: WaitReleaseOf needs a holder's fingerprint", ErrInvalidOption)
		}
		if err := c.usable(); err != nil {
			return err
		}
		return c.e.WaitRelease(ctx, key, fingerprint, defaultBackoff)
	},
	Logger: func(client any) *slog.Logger {
		if c, ok := client.(*Client); ok && c != nil {
			return c.logger()
		}
		return slog.Default()
	},
	Observers: func(client any) []observe.Observer {
		if c, ok := client.(*Client); ok && c != nil && c.obs != nil {
			return c.obs.all
		}
		return nil
	},
	DeploymentOf: func(client any) door.Deployment {
		c, ok := client.(*Client)
		switch {
		case !ok || c == nil:
			return door.Deployment{Err: fmt.Errorf("%w: a %T, not a *dlock.Client", ErrInvalidOption, client)}
		case c.err != nil:
			return door.Deployment{Err: c.err}
		case c.e.Redlock():
			return door.Deployment{Redlock: true}
		}
		return door.Deployment{Redis: c.e.Redis()}
	},
})

// releaseStoring is door.ReleaseStoring: a Release that also stores value
// under key, in the same step.
func (l *Lock) releaseStoring(ctx context.Context, key string, value []byte, ttl time.Duration) (err error) {
	if l.obs != nil {
		ctx = l.startCall(ctx, observe.EventRelease)
		defer l.observeRelease(ctx, time.Now(), &err)
	}
	return l.h.ReleaseStoring(ctx, key, value, ttl)
}
