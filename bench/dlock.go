package bench

import (
	"context"
	"errors"
	"time"

	"github.com/dlock-go/dlock"
	"github.com/redis/go-redis/v9"
)

// dlockRow is dlock on one node, obtaining with opts.
func dlockRow(name, note string, opts ...dlock.ObtainOption) Row {
	return Row{
		Name: name,
		Note: note,
		New: func(env Env) (Locker, error) {
			rdb := newGoRedis(env, env.Nodes[0])
			return &dlockLocker{client: dlock.New(rdb), rdbs: []*redis.Client{rdb}, env: env, opts: opts}, nil
		},
	}
}

// dlockDeadlineRow is dlockRow whose calls get a context that can end: one
// with a deadline, as a request's context has, rather than the run's
// Background. dlock makes a call with such a context return when it ends,
// even if Redis does not answer (go-redis would wait for its read timeout),
// by sending the call from a goroutine of its own: this row measures what
// that costs. The deadline, a day away, never passes.
func dlockDeadlineRow(name, note string) Row {
	row := dlockRow(name, note)
	newLocker := row.New
	row.New = func(env Env) (Locker, error) {
		locker, err := newLocker(env)
		if err != nil {
			return nil, err
		}
		l := locker.(*dlockLocker)
		l.ctx, l.cancel = context.WithTimeout(context.Background(), 24*time.Hour)
		return l, nil
	}
	return row
}

type dlockLocker struct {
	client *dlock.Client
	rdbs   []*redis.Client // closed after the Client
	env    Env
	opts   []dlock.ObtainOption
	// ctx, if not nil, is the context of every call in place of the
	// caller's (dlockDeadlineRow); cancel ends it at Close.
	ctx    context.Context
	cancel context.CancelFunc
}

func (l *dlockLocker) Obtain(ctx context.Context, key string) (Held, error) {
	if l.ctx != nil {
		ctx = l.ctx
	}
	lock, err := l.client.Obtain(ctx, key, l.env.TTL, l.opts...)
	if err != nil {
		return nil, err
	}
	return dlockHeld{lock: lock, ctx: l.ctx}, nil
}

func (l *dlockLocker) Close() error {
	if l.cancel != nil {
		defer l.cancel()
	}
	errs := []error{l.client.Close()}
	for _, rdb := range l.rdbs {
		errs = append(errs, rdb.Close())
	}
	return errors.Join(errs...)
}

type dlockHeld struct {
	lock *dlock.Lock
	ctx  context.Context // if not nil, in place of the caller's (see dlockLocker)
}

func (h dlockHeld) Release(ctx context.Context) error {
	if h.ctx != nil {
		ctx = h.ctx
	}
	return h.lock.Release(ctx)
}

// refresh extends the lock by ttl, for the user-written renewer.
func (h dlockHeld) refresh(ctx context.Context, env Env) error {
	return h.lock.Refresh(ctx, env.TTL)
}

// Lost reports whether dlock says the lock ended (WithAutoRenew rows).
func (h dlockHeld) Lost() bool { return h.lock.Err() != nil }
