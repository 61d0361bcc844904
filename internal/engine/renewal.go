package engine

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/dlock-go/dlock/internal/renew"
	"github.com/redis/go-redis/v9"
)

// Automatic renewal (WithAutoRenew): the Engine's renewer (internal/renew)
// refreshes its renewed holdings in batches, a pipeline per server, and
// ends those it finds gone.

// initRenewer sets up the Engine's renewer (WithAutoRenew).
func (e *Engine) initRenewer() {
	cfg := renew.Config[*renewedHold]{
		Refresh: e.refreshMany,
		Timeout: e.refreshTimeout,
		Lost: func(h *renewedHold, how string, release bool) {
			l := h.lock()
			if l.end(l.lostError(how)) {
				e.logger.Warn("dlock: lock lost", "key", QuoteKey(l.key), "reason", how)
				if release {
					e.releaseInBackground(l.attempt())
				}
			}
		},
		Closed: func(h *renewedHold) { h.lock().end(errNotRenewed(h.key)) },
		Logger: e.logger,
		Owner:  e.own,
		Key:    func(h *renewedHold) string { return QuoteKey(h.key) },
	}
	if e.hooks != nil {
		cfg.Observe = e.observeRefreshes
	}
	e.renewer.Init(cfg)
}

// errNotRenewed ends a renewed lock when its Client closes.
func errNotRenewed(key string) error {
	return fmt.Errorf("%w: %s: the Client was closed, so nothing renews it: %w", ErrLockLost, QuoteKey(key), ErrClosed)
}

// refreshMany refreshes the locks of one renewer batch, handing the
// results to record as they come (see node.refreshMany).
func (e *Engine) refreshMany(ctx context.Context, locks []*renewedHold, record func([]*renewedHold, []renew.Result)) {
	if e.quorum != nil {
		record(locks, e.quorum.refreshMany(ctx, locks))
		return
	}
	var wg sync.WaitGroup
	if e.cluster {
		locks = e.refreshSlotted(ctx, &wg, locks, record)
	}
	if len(locks) > 0 {
		e.node.refreshMany(ctx, locks, record)
	}
	wg.Wait()
}

// refreshTimeout is how long one attempt of a renewer batch whose shortest
// ttl is shortest may take: a sixth of it (on a Redlock, at least the node
// timeout). go-redis would go on retrying a dead server for seconds, on an
// old Cluster slot map, while a fresh attempt a little later finds the new
// primary.
func (e *Engine) refreshTimeout(shortest time.Duration) time.Duration {
	timeout := max(shortest/6, minRefreshTimeout)
	if q := e.quorum; q != nil {
		// A Redlock round gives each node the node timeout: a batch cut
		// shorter would fail on nodes that are slow, not dead.
		timeout = max(timeout, q.timeout())
	}
	return timeout
}

// minRefreshTimeout is the least time a batch of refreshes is given.
const minRefreshTimeout = 50 * time.Millisecond

// observeRefreshes tells the hooks the answers of a renewer batch, before
// the holdings found not held are ended.
func (e *Engine) observeRefreshes(holds []*renewedHold, results []renew.Result) {
	for i, rh := range holds {
		h := rh.lock()
		if h.gone.Load() {
			continue // released or lost meanwhile
		}
		err := results[i].Err
		if err == nil && !results[i].Held {
			err = h.notHeld("refresh")
		}
		e.hooks.Refreshed(h, err)
	}
}

// refreshMany refreshes every lock, each for its own ttl, in one pipeline
// per server, and hands each server's results to deliver as they come: on a
// Cluster, one pipeline per primary, all at once, so a primary that is down
// or failing over delays the refreshes of its own locks only. deliver may
// be called from several goroutines at once; refreshMany returns when every
// call has returned.
func (n *node) refreshMany(ctx context.Context, locks []*renewedHold, deliver func([]*renewedHold, []renew.Result)) {
	cluster, ok := n.rdb.(*redis.ClusterClient)
	if !ok {
		res := make([]renew.Result, len(locks))
		n.refreshOn(ctx, n.rdb, locks, res)
		deliver(locks, res)
		return
	}
	byPrimary := map[*redis.Client][]*renewedHold{}
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
func (n *node) refreshOn(ctx context.Context, rdb redis.Cmdable, locks []*renewedHold, results []renew.Result) {
	cmds := make([]*redis.Cmd, len(locks))
	pipe := rdb.Pipeline()
	for i, l := range locks {
		cmds[i] = pipe.EvalSha(ctx, l.kind.refresh.sha, l.renewKeys, (*Hold)(l).refreshArg(), l.renewal.Sent().Milliseconds())
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
			cmds[i] = pipe.Eval(ctx, l.kind.refresh.src, l.renewKeys, (*Hold)(l).refreshArg(), l.renewal.Sent().Milliseconds())
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

// refreshMany refreshes a renewer batch on every node, one pipeline per
// node, all at once; a lock holds when a quorum extended it. It waits for
// every node, but not for a minority once the node timeout has passed, nor
// for anyone past the batch's earliest validity deadline.
func (q *quorum) refreshMany(ctx context.Context, locks []*renewedHold) []renew.Result {
	type answer struct {
		i   int
		res []renew.Result
	}
	answers := make(chan answer, len(q.nodes))
	sent := 0
	for i, n := range q.nodes {
		if q.own.Go(func() {
			res := make([]renew.Result, len(locks))
			n.refreshMany(ctx, locks, func(group []*renewedHold, got []renew.Result) {
				q.place(locks, res, group, got)
			})
			answers <- answer{i, res}
		}) {
			sent++
		}
	}
	per := make([][]renew.Result, len(q.nodes))
	minority := time.NewTimer(q.timeout())
	defer minority.Stop()
	deadline := time.NewTimer(time.Until(earliestUntil(locks)))
	defer deadline.Stop()
	for got := 0; got < sent; {
		select {
		case a := <-answers:
			per[a.i] = a.res
			got++
			continue
		case <-minority.C:
			if got < q.need {
				continue // wait for a quorum of answers, until the deadline
			}
		case <-deadline.C:
		}
		break
	}
	results := make([]renew.Result, len(locks))
	for j, l := range locks {
		var yes, no int
		var errs []error
		for i, n := range q.nodes {
			switch {
			case per[i] == nil:
				errs = append(errs, n.wrap("refresh", l.key, fmt.Errorf("no answer in time")))
			case per[i][j].Err != nil:
				errs = append(errs, per[i][j].Err)
			case per[i][j].Held:
				yes++
			default:
				no++
			}
		}
		switch {
		case yes >= q.need:
			results[j].Held = true
		case no > len(q.nodes)-q.need:
		default:
			results[j].Err = &QuorumError{Op: "refresh", Key: l.key, Nodes: len(q.nodes), Quorum: q.need, Granted: yes, Errs: errs}
		}
	}
	return results
}

// place copies the results of group, a part of locks, into res, at the
// places of its locks. The groups of one node are disjoint, so concurrent
// calls write different elements.
func (q *quorum) place(locks []*renewedHold, res []renew.Result, group []*renewedHold, got []renew.Result) {
	if len(group) == len(locks) {
		copy(res, got)
		return
	}
	at := make(map[*renewedHold]int, len(locks))
	for i, l := range locks {
		at[l] = i
	}
	for j, l := range group {
		res[at[l]] = got[j]
	}
}

func earliestUntil(locks []*renewedHold) time.Time {
	t := locks[0].Until()
	for _, l := range locks[1:] {
		if u := l.Until(); u.Before(t) {
			t = u
		}
	}
	return t
}
