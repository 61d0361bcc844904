package bench

import (
	"context"
	"errors"

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

// dlockDeadlineRow is dlockRow whose calls get a context with a deadline.
// dlock makes a call with a context that can end return when it ends, even
// if Redis does not answer (go-redis would wait for its read timeout), by
// sending the call from a goroutine of its own: this row measures what
// that costs.
func dlockDeadlineRow(name, note string) Row {
	row := dlockRow(name, note)
	row.Deadline = true
	return row
}

type dlockLocker struct {
	client *dlock.Client
	rdbs   []*redis.Client // closed after the Client
	env    Env
	opts   []dlock.ObtainOption
}

func (l *dlockLocker) Obtain(ctx context.Context, key string) (Held, error) {
	lock, err := l.client.Obtain(ctx, key, l.env.TTL, l.opts...)
	if err != nil {
		return nil, err
	}
	return dlockHeld{lock}, nil
}

func (l *dlockLocker) Close() error {
	errs := []error{l.client.Close()}
	for _, rdb := range l.rdbs {
		errs = append(errs, rdb.Close())
	}
	return errors.Join(errs...)
}

type dlockHeld struct{ lock *dlock.Lock }

func (h dlockHeld) Release(ctx context.Context) error { return h.lock.Release(ctx) }

// refresh extends the lock by ttl, for the user-written renewer.
func (h dlockHeld) refresh(ctx context.Context, env Env) error {
	return h.lock.Refresh(ctx, env.TTL)
}

// Lost reports whether dlock says the lock ended (WithAutoRenew rows).
func (h dlockHeld) Lost() bool { return h.lock.Err() != nil }
