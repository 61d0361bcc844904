package bench

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"
)

// refresher is a Held that can be extended by the row's ttl.
type refresher interface {
	Held
	refresh(ctx context.Context, env Env) error
}

// userRenewRow wraps row so that every lock it obtains is refreshed every
// ttl/3 by a goroutine of its own until Release: the renewal a user writes
// around a library that has none.
func userRenewRow(row Row) Row {
	newLocker := row.New
	row.New = func(env Env) (Locker, error) {
		inner, err := newLocker(env)
		if err != nil {
			return nil, err
		}
		return userRenewLocker{Locker: inner, env: env}, nil
	}
	return row
}

type userRenewLocker struct {
	Locker
	env Env
}

func (l userRenewLocker) Obtain(ctx context.Context, key string) (Held, error) {
	h, err := l.Locker.Obtain(ctx, key)
	if err != nil {
		return nil, err
	}
	r, ok := h.(refresher)
	if !ok {
		_ = h.Release(ctx)
		return nil, fmt.Errorf("bench: %T cannot be refreshed", h)
	}
	return startRenewer(r, l.env), nil
}

// userRenewed is a lock and the goroutine that refreshes it.
type userRenewed struct {
	held   refresher
	cancel context.CancelFunc
	done   chan struct{}
	lost   atomic.Bool
}

func startRenewer(h refresher, env Env) *userRenewed {
	ctx, cancel := context.WithCancel(context.Background())
	r := &userRenewed{held: h, cancel: cancel, done: make(chan struct{})}
	go r.loop(ctx, env)
	return r
}

// loop refreshes every ttl/3 until the context ends or a refresh fails,
// after which the lock counts as lost.
func (r *userRenewed) loop(ctx context.Context, env Env) {
	defer close(r.done)
	tick := time.NewTicker(env.TTL / 3)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
			if err := r.held.refresh(ctx, env); err != nil {
				r.lost.Store(ctx.Err() == nil)
				return
			}
		}
	}
}

// Release stops the renewer, waits for it, and releases the lock.
func (r *userRenewed) Release(ctx context.Context) error {
	r.cancel()
	<-r.done
	return r.held.Release(ctx)
}

func (r *userRenewed) Lost() bool { return r.lost.Load() }
