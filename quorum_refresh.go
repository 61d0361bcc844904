package dlock

import (
	"context"
	"fmt"
	"time"
)

// refreshMany refreshes a renewer batch on every node, one pipeline per
// node, all at once; a lock holds when a quorum extended it. It waits for
// every node, but not for a minority once the node timeout has passed, nor
// for anyone past the batch's earliest validity deadline.
func (q *quorum) refreshMany(ctx context.Context, locks []*Lock) []refreshResult {
	type answer struct {
		i   int
		res []refreshResult
	}
	answers := make(chan answer, len(q.nodes))
	sent := 0
	for i, n := range q.nodes {
		if !q.c.track() {
			continue
		}
		sent++
		go func() {
			defer q.c.wg.Done()
			res := make([]refreshResult, len(locks))
			n.refreshMany(ctx, locks, func(group []*Lock, got []refreshResult) {
				q.place(locks, res, group, got)
			})
			answers <- answer{i, res}
		}()
	}
	per := make([][]refreshResult, len(q.nodes))
	minority := time.NewTimer(q.timeout)
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
	results := make([]refreshResult, len(locks))
	for j, l := range locks {
		var yes, no int
		var errs []error
		for i, n := range q.nodes {
			switch {
			case per[i] == nil:
				errs = append(errs, n.wrap("refresh", l.key, fmt.Errorf("no answer in time")))
			case per[i][j].err != nil:
				errs = append(errs, per[i][j].err)
			case per[i][j].held:
				yes++
			default:
				no++
			}
		}
		switch {
		case yes >= q.need:
			results[j].held = true
		case no > len(q.nodes)-q.need:
		default:
			results[j].err = &QuorumError{Op: "refresh", Key: l.key, Nodes: len(q.nodes), Quorum: q.need, Granted: yes, Errs: errs}
		}
	}
	return results
}

// place copies the results of group, a part of locks, into res, at the
// places of its locks. The groups of one node are disjoint, so concurrent
// calls write different elements.
func (q *quorum) place(locks []*Lock, res []refreshResult, group []*Lock, got []refreshResult) {
	if len(group) == len(locks) {
		copy(res, got)
		return
	}
	at := make(map[*Lock]int, len(locks))
	for i, l := range locks {
		at[l] = i
	}
	for j, l := range group {
		res[at[l]] = got[j]
	}
}

func earliestUntil(locks []*Lock) time.Time {
	t := locks[0].Until()
	for _, l := range locks[1:] {
		t = earlier(t, l.Until())
	}
	return t
}
