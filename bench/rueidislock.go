package bench

import (
	"context"
	"crypto/tls"
	"net"
	"strconv"

	"github.com/redis/rueidis"
	"github.com/redis/rueidis/rueidislock"
)

// rueidislockRow is rueidislock on one node with KeyMajority majority (2 is
// its default: three keys per lock, two needed; its README advises 1 for a
// single Redis) and NoLoopTracking as noLoop (false by default). Its
// KeyValidity is env.TTL.
func rueidislockRow(name, note string, majority int, noLoop bool) Row {
	return Row{
		Name: name,
		Note: note,
		New: func(env Env) (Locker, error) {
			opt := rueidislock.LockerOption{
				ClientOption:   rueidis.ClientOption{InitAddress: env.Nodes[:1]},
				KeyValidity:    env.TTL,
				KeyMajority:    int32(majority),
				NoLoopTracking: noLoop,
			}
			if env.Dial != nil {
				opt.ClientOption.DialCtxFn = func(ctx context.Context, dst string, _ *net.Dialer, _ *tls.Config) (net.Conn, error) {
					return env.Dial(ctx, "tcp", dst)
				}
			}
			locker, err := rueidislock.NewLocker(opt)
			if err != nil {
				return nil, err
			}
			return rueidisLocker{locker}, nil
		},
		RedisKeys: func(key string) []string {
			keys := make([]string, 2*majority-1)
			for i := range keys {
				keys[i] = "rueidislock:" + strconv.Itoa(i) + ":" + key // its default KeyPrefix
			}
			return keys
		},
		Quorum: majority,
	}
}

type rueidisLocker struct{ locker rueidislock.Locker }

// Obtain returns a lock that lives as long as ctx: rueidislock releases it
// when ctx ends.
func (l rueidisLocker) Obtain(ctx context.Context, key string) (Held, error) {
	lockCtx, cancel, err := l.locker.WithContext(ctx, key)
	if err != nil {
		return nil, err
	}
	return rueidisHeld{ctx: lockCtx, cancel: cancel}, nil
}

func (l rueidisLocker) Close() error {
	l.locker.Close()
	return nil
}

type rueidisHeld struct {
	ctx    context.Context
	cancel context.CancelFunc
}

// Release cancels the lock's context; rueidislock's cancel function
// returns once its keys are deleted.
func (h rueidisHeld) Release(context.Context) error {
	h.cancel()
	return nil
}

// Lost reports whether rueidislock cancelled the lock's context.
func (h rueidisHeld) Lost() bool { return h.ctx.Err() != nil }
