package dlock

import (
	"context"
	"sync"
	"time"
)

// quorum runs the lock scripts on N independent Redis nodes (Redlock): a
// lock is ours while a majority of them hold our token.
type quorum struct {
	c       *Client
	nodes   []*node
	need    int           // N/2+1
	timeout time.Duration // how long one round waits for a node
	workers workers       // run each node's part of a round
}

// round sends o to the nodes at once (all of them, or those in only) and
// collects their answers. It returns when every node answered, when enough
// answers make decided true, or when the node timeout or ctx ends first;
// nodes that did not answer by then have answered false. wg lets a caller
// wait in the background for the stragglers.
func (q *quorum) round(ctx context.Context, o op, only []bool, decided func([]vote) bool) (votes []vote, wg *sync.WaitGroup) {
	votes = make([]vote, len(q.nodes))
	answers := make(chan answer, len(q.nodes)) // buffered: stragglers need no reader
	wg = new(sync.WaitGroup)
	sent := len(q.nodes)
	if only != nil {
		sent = 0
		for _, yes := range only {
			if yes {
				sent++
			}
		}
	}
	if !q.c.trackN(sent) {
		for i := range votes {
			votes[i] = vote{err: ErrClosed, answered: true}
		}
		return votes, wg
	}
	wg.Add(sent)
	defer func() { // why the nodes that did not answer may not have
		for i, v := range votes {
			if !v.answered {
				votes[i].failing = q.nodes[i].failing()
			}
		}
	}()
	detached := context.WithoutCancel(ctx) // each call runs to its end, so its outcome is known
	for i, n := range q.nodes {
		if only != nil && !only[i] {
			continue
		}
		q.workers.do(nodeCall{ctx: detached, n: n, o: o, i: i, answers: answers, wg: wg, after: o.after.of(i)})
	}
	timer := time.NewTimer(q.timeout)
	defer timer.Stop()
	for got := 0; got < sent; got++ {
		select {
		case a := <-answers:
			votes[a.i] = a.v
			if decided != nil && decided(votes) {
				return votes, wg
			}
		case <-timer.C:
			return votes, wg
		case <-ctx.Done():
			return votes, wg
		}
	}
	return votes, wg
}

// answer is one node's vote, as its goroutine sends it.
type answer struct {
	i int
	v vote
}

// stragglers are the nodes that had not answered an acquire when a quorum
// granted it. A later call of the Lock to one of them waits until the
// acquire's calls have all answered: on another connection it could
// otherwise overtake the acquire (commands on different connections are
// not ordered), a release finding nothing there before a late grant that
// then keeps the key until it expires.
type stragglers struct {
	wg      *sync.WaitGroup // the acquire round's calls
	pending []bool          // by node: had not answered
}

// unanswered tells, by node, which votes had not answered.
func unanswered(votes []vote) []bool {
	pending := make([]bool, len(votes))
	for i, v := range votes {
		pending[i] = !v.answered
	}
	return pending
}

// of returns what a call to node i has to wait for first: nil unless i is
// a straggler.
func (s *stragglers) of(i int) *sync.WaitGroup {
	if s == nil || !s.pending[i] {
		return nil
	}
	return s.wg
}
