package dlock

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"

	"github.com/redis/go-redis/v9"

	"github.com/dlock-go/dlock/internal/renew"
)

// refreshMany refreshes every lock, each for its own ttl, in one pipeline
// per server, and hands each server's results to deliver as they come: on a
// Cluster, one pipeline per primary, all at once, so a primary that is down
// or failing over delays the refreshes of its own locks only. deliver may
// be called from several goroutines at once; refreshMany returns when every
// call has returned.
func (n *node) refreshMany(ctx context.Context, locks []*renewedLock, deliver func([]*renewedLock, []renew.Result)) {
	cluster, ok := n.rdb.(*redis.ClusterClient)
	if !ok {
		res := make([]renew.Result, len(locks))
		n.refreshOn(ctx, n.rdb, locks, res)
		deliver(locks, res)
		return
	}
	byPrimary := map[*redis.Client][]*renewedLock{}
	for _, l := range locks {
		primary, err := cluster.MasterForKey(ctx, l.key)
		if err != nil {
			primary = nil // the ClusterClient finds it, below
		}
		byPrimary[primary] = append(byPrimary[primary], l)
	}
	var wg sync.WaitGroup
	for primary, group := range byPrimary {
		wg.Go(func() {
			res := make([]renew.Result, len(group))
			if primary != nil {
				n.refreshOn(ctx, primary, group, res)
			}
			if primary == nil || slices.ContainsFunc(res, func(r renew.Result) bool { return r.Err != nil }) {
				// Moved, failing over, or unknown: the ClusterClient follows
				// redirections, on a fresh slot map.
				n.reloadSlots(ctx)
				n.refreshOn(ctx, cluster, group, res)
			}
			deliver(group, res)
		})
	}
	wg.Wait()
}

// refreshOn refreshes locks in one pipeline of rdb into results. Scripts the
// server lost (NOSCRIPT) are sent again with EVAL, in a second pipeline.
func (n *node) refreshOn(ctx context.Context, rdb redis.Cmdable, locks []*renewedLock, results []renew.Result) {
	cmds := make([]*redis.Cmd, len(locks))
	pipe := rdb.Pipeline()
	for i, l := range locks {
		cmds[i] = pipe.EvalSha(ctx, l.kind.refresh.sha, l.kind.scriptKeys(l.keys), l.arg, l.renewal.Sent().Milliseconds())
	}
	_, _ = pipe.Exec(ctx) // each command keeps its own error
	var again []int
	for i, cmd := range cmds {
		if errors.Is(cmd.Err(), redis.ErrNoScript) {
			again = append(again, i)
		}
	}
	if len(again) > 0 {
		pipe = rdb.Pipeline()
		for _, i := range again {
			l := locks[i]
			cmds[i] = pipe.Eval(ctx, l.kind.refresh.src, l.kind.scriptKeys(l.keys), l.arg, l.renewal.Sent().Milliseconds())
		}
		_, _ = pipe.Exec(ctx)
	}
	for i, cmd := range cmds {
		v, err := cmd.Int64()
		results[i] = renew.Result{}
		switch {
		case err != nil:
			results[i].Err = n.wrap("refresh", locks[i].key, err)
		case v == ours:
			results[i].Held = true
		case v == releasedBefore:
			// A Release of the Lock whose answer did not come back
			// (ErrOutcomeUnknown) released it: it ended as released, not
			// lost; the renewer finds it ended.
			locks[i].lock().end(ErrReleased)
		case v != notOurs:
			results[i].Err = n.wrap("refresh", locks[i].key, fmt.Errorf("unexpected script reply %v", v))
		}
	}
}
