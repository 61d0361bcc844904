package dlock

import (
	"context"
	"fmt"
	"time"

	"github.com/dlock-go/dlock/internal/renew"
)

// refreshMany refreshes a renewer batch on every node, one pipeline per
// node, all at once; a lock holds when a quorum extended it. It waits for
// every node, but not for a minority once the node timeout has passed, nor
// for anyone past the batch's earliest validity deadline.
func (q *quorum) refreshMany(ctx context.Context, locks []*renewedLock) []renew.Result {
	type answer struct {
		i   int
		res []renew.Result
	}
	answers := make(chan answer, len(q.nodes))
	sent := 0
	for i, n := range q.nodes {
		if q.own.Go(func() {
			res := make([]renew.Result, len(locks))
			n.refreshMany(ctx, locks, func(group []*renewedLock, got []renew.Result) {
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
func (q *quorum) place(locks []*renewedLock, res []renew.Result, group []*renewedLock, got []renew.Result) {
	if len(group) == len(locks) {
		copy(res, got)
		return
	}
	at := make(map[*renewedLock]int, len(locks))
	for i, l := range locks {
		at[l] = i
	}
	for j, l := range group {
		res[at[l]] = got[j]
	}
}

func earliestUntil(locks []*renewedLock) time.Time {
	t := locks[0].Until()
	for _, l := range locks[1:] {
		if u := l.Until(); u.Before(t) {
			t = u
		}
	}
	return t
}
