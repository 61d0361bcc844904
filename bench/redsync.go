package bench

import (
	"context"
	"errors"
	"math"
	"time"

	"github.com/go-redsync/redsync/v4"
	redsyncredis "github.com/go-redsync/redsync/v4/redis"
	"github.com/go-redsync/redsync/v4/redis/goredis/v9"
	"github.com/redis/go-redis/v9"
)

// redsyncRow is redsync with one pool per node, each a go-redis client at
// its defaults. Every lock gets a new Mutex, as a Mutex is not safe for
// concurrent use; WithExpiry(env.TTL) is added before opts.
func redsyncRow(name, note string, opts ...redsync.Option) Row {
	return Row{
		Name: name,
		Note: note,
		New: func(env Env) (Locker, error) {
			l := &redsyncLocker{opts: append([]redsync.Option{redsync.WithExpiry(env.TTL)}, opts...)}
			pools := make([]redsyncredis.Pool, len(env.Nodes))
			for i, addr := range env.Nodes {
				rdb := newGoRedis(env, addr)
				l.rdbs = append(l.rdbs, rdb)
				pools[i] = goredis.NewPool(rdb)
			}
			l.rs = redsync.New(pools...)
			return l, nil
		},
	}
}

// redsyncFastRetry is the tuned row's options: retry every 2 ms, and do not
// give up before the context ends.
func redsyncFastRetry() []redsync.Option {
	return []redsync.Option{redsync.WithRetryDelay(2 * time.Millisecond), redsync.WithTries(math.MaxInt32)}
}

type redsyncLocker struct {
	rs   *redsync.Redsync
	rdbs []*redis.Client
	opts []redsync.Option
}

func (l *redsyncLocker) Obtain(ctx context.Context, key string) (Held, error) {
	m := l.rs.NewMutex(key, l.opts...)
	if err := m.LockContext(ctx); err != nil {
		return nil, err
	}
	return redsyncHeld{m}, nil
}

func (l *redsyncLocker) Close() error {
	var errs []error
	for _, rdb := range l.rdbs {
		errs = append(errs, rdb.Close())
	}
	return errors.Join(errs...)
}

type redsyncHeld struct{ m *redsync.Mutex }

func (h redsyncHeld) Release(ctx context.Context) error {
	ok, err := h.m.UnlockContext(ctx)
	if err == nil && !ok {
		return errNotHeld
	}
	return err
}

// refresh extends the lock by its expiry, for the user-written renewer.
func (h redsyncHeld) refresh(ctx context.Context, _ Env) error {
	ok, err := h.m.ExtendContext(ctx)
	if err == nil && !ok {
		return errNotHeld
	}
	return err
}
