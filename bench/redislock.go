package bench

import (
	"context"
	"time"

	"github.com/bsm/redislock"
	"github.com/redis/go-redis/v9"
)

// redislockRow is redislock on one node. retry, if not nil, makes the
// RetryStrategy of each Obtain: a new one every time, since redislock's
// LimitRetry and ExponentialBackoff count across the calls that share them.
// With a nil retry, Obtain makes one attempt, redislock's default.
func redislockRow(name, note string, retry func() redislock.RetryStrategy) Row {
	return Row{
		Name: name,
		Note: note,
		New: func(env Env) (Locker, error) {
			rdb := newGoRedis(env, env.Nodes[0])
			return &redislockLocker{client: redislock.New(rdb), rdb: rdb, env: env, retry: retry}, nil
		},
	}
}

// linearRetry retries every d, for as long as Obtain's context allows.
func linearRetry(d time.Duration) func() redislock.RetryStrategy {
	return func() redislock.RetryStrategy { return redislock.LinearBackoff(d) }
}

type redislockLocker struct {
	client *redislock.Client
	rdb    *redis.Client
	env    Env
	retry  func() redislock.RetryStrategy
}

func (l *redislockLocker) Obtain(ctx context.Context, key string) (Held, error) {
	var opt *redislock.Options
	if l.retry != nil {
		opt = &redislock.Options{RetryStrategy: l.retry()}
	}
	lock, err := l.client.Obtain(ctx, key, l.env.TTL, opt)
	if err != nil {
		return nil, err
	}
	return redislockHeld{lock}, nil
}

func (l *redislockLocker) Close() error { return l.rdb.Close() }

type redislockHeld struct{ lock *redislock.Lock }

func (h redislockHeld) Release(ctx context.Context) error { return h.lock.Release(ctx) }

// refresh extends the lock by ttl, for the user-written renewer.
func (h redislockHeld) refresh(ctx context.Context, env Env) error {
	return h.lock.Refresh(ctx, env.TTL, nil)
}
