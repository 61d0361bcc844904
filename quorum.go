package dlock

import (
	"context"
	"sync"
	"time"

	"github.com/dlock-go/dlock/internal/owner"
	"github.com/dlock-go/dlock/internal/round"
)

// quorum runs the lock scripts on N independent Redis nodes (Redlock): a
// lock is ours while a majority of them hold our token. Its rounds go out
// through a round.Pool; what their votes decide is in the files quorum_*.go.
type quorum struct {
	nodes []*node
	need  int // N/2+1
	pool  *round.Pool[*node, op, reply]
	own   *owner.Group // the Client's
}

// vote is one node's answer in a round.
type vote = round.Vote[reply]

func newQuorum(nodes []*node, timeout time.Duration, own *owner.Group) *quorum {
	return &quorum{nodes: nodes, need: len(nodes)/2 + 1, own: own, pool: round.New(round.Config[*node, op, reply]{
		Nodes:   nodes,
		Timeout: timeout,
		Run:     (*node).run,
		Failing: (*node).failing,
		Owner:   own,
		Closed:  ErrClosed,
	})}
}

// timeout is how long a round waits for a node (WithNodeTimeout).
func (q *quorum) timeout() time.Duration { return q.pool.Timeout() }

// round sends o to the nodes at once (all of them, or those in only) and
// collects their answers. It returns when every node answered, when enough
// answers make decided true, or when the node timeout or ctx ends first;
// nodes that did not answer by then have answered false. wg lets a caller
// wait in the background for the stragglers. A call of o to a node that
// had not answered the acquire of o's Lock waits for that answer first
// (o.after, see round.Stragglers).
func (q *quorum) round(ctx context.Context, o op, only []bool, decided func([]vote) bool) (votes []vote, wg *sync.WaitGroup) {
	return q.pool.Round(ctx, o, only, o.after, decided)
}
