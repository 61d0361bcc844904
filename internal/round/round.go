// Package round sends one operation to several nodes at once and collects
// their answers: the round of a Redlock quorum. What the operation is, how
// a node carries it out and what the answers decide belong to the caller;
// a round only fans the operation out, waits as long as it is told to,
// and keeps every node's call running to its end, so that its outcome is
// known even when nobody waits for it any more.
package round

import (
	"context"
	"slices"
	"sync"
	"time"

	"github.com/dlock-go/dlock/internal/owner"
)

// Vote is one node's answer in a round.
type Vote[R any] struct {
	R        R     // the answer, when Err is nil
	Err      error // the node's failure
	Answered bool  // false: the round ended before the node answered
	// Failing is, for a node that had not answered, the failure it was in
	// when the round ended, or nil (see Pool's failing function).
	Failing error
}

// Pool runs rounds of operations of type O on nodes of type N, whose
// answers are of type R.
type Pool[N, O, R any] struct {
	cfg   Config[N, O, R]
	calls chan call[N, O, R] // unbuffered: a send succeeds when a worker waits
}

// Config is what a Pool is made of.
type Config[N, O, R any] struct {
	Nodes   []N
	Timeout time.Duration // how long a round waits for a node
	// Run carries an operation out on a node (a method expression of N's
	// fits: the node comes first).
	Run func(n N, ctx context.Context, o O) (R, error)
	// Failing tells why a node that did not answer in time may not have;
	// nil if nothing is known.
	Failing func(n N) error
	// Owner owns the pool's goroutines: they stop once it closes, and
	// calls under way run to their end first.
	Owner *owner.Group
	// Closed is every vote's error in a round that starts once Owner is
	// closed.
	Closed error
}

// New returns a Pool made of cfg.
func New[N, O, R any](cfg Config[N, O, R]) *Pool[N, O, R] {
	return &Pool[N, O, R]{cfg: cfg, calls: make(chan call[N, O, R])}
}

// Timeout is how long a round waits for a node.
func (p *Pool[N, O, R]) Timeout() time.Duration { return p.cfg.Timeout }

// Round sends o to the nodes at once (all of them, or those in only) and
// collects their answers, by node. It returns when every node answered,
// when enough answers make decided true, or when the pool's timeout or
// ctx ends first; nodes that did not answer by then have votes with
// Answered false. Each node's call runs to its end whatever happens to
// ctx (without its cancellation); wg lets a caller wait in the background
// for the stragglers. A call to a node in after waits for after's calls
// to that node first (see Stragglers). Once the owner closes, every vote
// is the Config's Closed error and nothing is sent.
func (p *Pool[N, O, R]) Round(ctx context.Context, o O, only []bool, after *Stragglers, decided func([]Vote[R]) bool) (votes []Vote[R], wg *sync.WaitGroup) {
	nodes := p.cfg.Nodes
	votes = make([]Vote[R], len(nodes))
	answers := make(chan answer[R], len(nodes)) // buffered: stragglers need no reader
	wg = new(sync.WaitGroup)
	sent := len(nodes)
	if only != nil {
		sent = 0
		for _, yes := range only {
			if yes {
				sent++
			}
		}
	}
	if !p.cfg.Owner.Add(sent) {
		for i := range votes {
			votes[i] = Vote[R]{Err: p.cfg.Closed, Answered: true}
		}
		return votes, wg
	}
	wg.Add(sent)
	defer func() { // why the nodes that did not answer may not have
		for i, v := range votes {
			if !v.Answered {
				votes[i].Failing = p.cfg.Failing(nodes[i])
			}
		}
	}()
	detached := context.WithoutCancel(ctx) // each call runs to its end, so its outcome is known
	for i, n := range nodes {
		if only != nil && !only[i] {
			continue
		}
		p.do(call[N, O, R]{ctx: detached, n: n, o: o, i: i, answers: answers, wg: wg, after: after.of(i)})
	}
	timer := time.NewTimer(p.cfg.Timeout)
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

// answer is one node's vote, as its call sends it.
type answer[R any] struct {
	i int
	v Vote[R]
}

// Stragglers are the nodes that had not answered a round (an acquire that
// a quorum granted without them). A later call to one of them waits until
// the round's calls have all answered: on another connection it could
// otherwise overtake the earlier call (commands on different connections
// are not ordered), a release finding nothing there before a late grant
// that then keeps the key until it expires.
type Stragglers struct {
	wg      *sync.WaitGroup // the round's calls
	pending []bool          // by node: had not answered
}

// NewStragglers returns the nodes of votes that had not answered, with
// wg, the round's calls. It returns nil, and allocates nothing, when every
// node answered.
func NewStragglers[R any](wg *sync.WaitGroup, votes []Vote[R]) *Stragglers {
	if !slices.ContainsFunc(votes, func(v Vote[R]) bool { return !v.Answered }) {
		return nil
	}
	pending := make([]bool, len(votes))
	for i, v := range votes {
		pending[i] = !v.Answered
	}
	return &Stragglers{wg: wg, pending: pending}
}

// of returns what a call to node i has to wait for first: nil unless i is
// a straggler.
func (s *Stragglers) of(i int) *sync.WaitGroup {
	if s == nil || !s.pending[i] {
		return nil
	}
	return s.wg
}
