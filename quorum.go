package dlock

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
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

// vote is one node's answer in a round.
type vote struct {
	r        reply
	err      error
	answered bool
	// not answered: the failure the node was in when the round ended, or
	// nil (see node.failing)
	failing error
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

// count tells how many votes have answered with code, and how many failed.
func count(votes []vote, code int64) (yes, failed int) {
	for _, v := range votes {
		switch {
		case !v.answered || v.err != nil:
			failed++
		case v.r.code == code:
			yes++
		}
	}
	return yes, failed
}

func (q *quorum) run(ctx context.Context, o op) (reply, error) {
	switch o.kind {
	case opAcquire:
		return q.acquire(ctx, o)
	case opRefresh:
		return q.refresh(ctx, o)
	case opTTL:
		return q.ttl(ctx, o)
	case opInspect:
		return q.inspect(ctx, o)
	case opRelease, opForceRelease:
		return q.release(ctx, o)
	}
	// An operation no quorum runs as a whole (a fair waiter's leave, a
	// fence raise, which has rounds of its own) must not become another.
	return reply{}, fmt.Errorf("dlock: %s %s: not an operation of a Redlock quorum", o.kind, quoteKey(o.key()))
}

// acquire takes the lock on a quorum (see decide for its fence). If that
// fails, it takes the attempt back on every node that may have granted it,
// including those that did not answer in time (see undo).
func (q *quorum) acquire(ctx context.Context, o op) (reply, error) {
	sent := time.Now()
	// Done once a quorum said yes, or none is possible any more and the
	// nodes still to answer cannot change why (see lost).
	votes, wg := q.round(ctx, o, nil, func(votes []vote) bool {
		yes, _ := count(votes, acquired)
		pending := q.pending(votes)
		no := len(votes) - yes - pending
		if yes >= q.need {
			return true
		}
		return len(votes)-no < q.need && q.lost(votes, false) != lostUnknown
	})
	r, err := q.decide(o, votes, sent)
	if err != nil && ctx.Err() != nil {
		// The round was cut short by the context: say so, so that Obtain
		// reports a lock it found held at its last full attempt as such.
		err = fmt.Errorf("%w: %w", err, contextError(ctx))
	}
	switch {
	case r.code != acquired && slices.ContainsFunc(votes, mayHold):
		q.undo(ctx, wg, votes, o)
	case r.code == acquired && q.pending(votes) > 0:
		r.stragglers = &stragglers{wg: wg, pending: unanswered(votes)}
	}
	return r, err
}

// mayHold reports whether a node may have granted the lock: it said so, or
// its answer is unknown.
func mayHold(v vote) bool {
	return !v.answered || v.err != nil || v.r.code == acquired
}

// pending counts the nodes that have not answered yet.
func (q *quorum) pending(votes []vote) int {
	n := 0
	for _, v := range votes {
		if !v.answered {
			n++
		}
	}
	return n
}

// decide decides an acquire round. With a quorum and time left, the
// lock is ours. Its fence is handed out by the quorum when Lock.Fence first
// asks for it (fenceRaise), so an acquire costs one round of plain SET
// commands, and only holders that use fences pay for them.
func (q *quorum) decide(o op, votes []vote, sent time.Time) (reply, error) {
	yes, failed := count(votes, acquired)
	if yes < q.need {
		return q.lose(o, votes, yes, failed)
	}
	granted := make([]bool, len(votes))
	for i, v := range votes {
		granted[i] = v.answered && v.err == nil && v.r.code == acquired
	}
	if !time.Now().Before(sent.Add(o.ttl - drift(o.ttl))) {
		return reply{}, fmt.Errorf("%w: %s: a quorum granted it, but its validity ran out first: %v", ErrNotObtained, quoteKey(o.key()), time.Since(sent))
	}
	return reply{code: acquired, raise: &fenceRaise{q: q, keys: o.keys, token: o.token, granted: granted}}, nil
}

// fenceRaise hands out the fence of a Redlock lock, in two rounds: each
// node that granted the lock and still holds it hands out a fence of its
// own (raise_fence.lua); the largest of a quorum of them is the lock's, and
// is stored on the nodes of that quorum that handed out less, where the
// lock is still ours. Only once a quorum holds it may the fence be used: any
// later holder's quorum shares a node with this one, on which its fence
// comes out larger. Nodes that answer after a round ended are left out:
// what they handed out is no part of the fence.
type fenceRaise struct {
	q       *quorum
	keys    []string
	token   any
	granted []bool // nodes that granted the lock
}

// run hands out the fence, and returns it with true once a quorum holds
// it; 0 and false if that fails.
func (f *fenceRaise) run(ctx context.Context) (int64, bool) {
	need := f.q.need
	o := op{kind: opRaiseFence, keys: f.keys, token: f.token}
	votes, _ := f.q.round(ctx, o, f.granted, func(votes []vote) bool {
		n, _ := count(votes, 1)
		return n >= need
	})
	var fence int64
	for _, v := range votes {
		if v.answered && v.err == nil && v.r.code == 1 {
			fence = max(fence, v.r.value)
		}
	}
	at := 0 // nodes that hold the fence already
	lower := make([]bool, len(votes))
	for i, v := range votes {
		if v.answered && v.err == nil && v.r.code == 1 {
			if v.r.value == fence {
				at++
			} else {
				lower[i] = true
			}
		}
	}
	if n, _ := count(votes, 1); n < need {
		return 0, false
	}
	if at < need {
		o.fence = fence
		raised, _ := f.q.round(ctx, o, lower, func(votes []vote) bool {
			n, _ := count(votes, 1)
			return at+n >= need
		})
		if n, _ := count(raised, 1); at+n < need {
			return 0, false
		}
	}
	return fence, true
}

// Why an acquire without a quorum failed, as lost tells it.
const (
	lostUnknown = iota // it depends on nodes that have not answered yet
	lostHeld           // another holder has it
	lostFailed         // too many nodes failed for any quorum
)

// lost tells why an acquire round without a quorum failed. Another holder
// has the lock when a node said so and the nodes that failed are few
// enough for a quorum, or when a quorum answered but did not grant it;
// otherwise too many nodes failed. A node that has not answered yet may
// still fail or say "held": while that would change the answer, lost says
// lostUnknown, unless the round is over (final), where such nodes count
// for neither.
func (q *quorum) lost(votes []vote, final bool) int {
	others, _ := count(votes, held)
	errored, pending := 0, 0
	for _, v := range votes {
		switch {
		case !v.answered:
			pending++
		case v.err != nil:
			errored++
		}
	}
	spare := len(votes) - q.need // failures a quorum can take
	switch {
	case others > 0 && errored+pending <= spare || len(votes)-errored-pending >= q.need:
		return lostHeld
	case errored > spare:
		return lostFailed
	case pending > 0 && !final:
		return lostUnknown
	case others > 0:
		return lostHeld
	default:
		return lostFailed
	}
}

// lose explains an acquire without a quorum: ErrNotObtained when another
// holder has it (Obtain waits for it), a QuorumError when too many nodes
// failed (see lost).
func (q *quorum) lose(o op, votes []vote, yes, failed int) (reply, error) {
	if q.lost(votes, true) == lostHeld {
		pttl := leastTTL(votes, func(r reply) bool { return r.code == held })
		if slices.ContainsFunc(votes, func(v vote) bool { return v.answered && v.err == nil && v.r.code == wrongType }) {
			return reply{code: wrongType}, nil
		}
		return reply{code: held, value: pttl}, nil
	}
	others, _ := count(votes, held)
	errored := 0 // answered with an error; the rest of failed had not answered yet
	for _, v := range votes {
		if v.answered && v.err != nil {
			errored++
		}
	}
	summary := fmt.Sprintf("%d of %d nodes granted the lock, %d needed; %d held by another holder, %d failed", yes, len(votes), q.need, others, errored)
	if pending := failed - errored; pending > 0 {
		summary += fmt.Sprintf(", %d not heard from before that was clear", pending)
	}
	return reply{}, q.error(o, summary, votes)
}

// undo takes back the failed acquire o, quietly (no release message: the
// lock is still another holder's, and a message would only wake this
// caller for nothing): at once on the nodes that granted it, so that the
// caller's next attempt does not find them taken by this one; in the
// background on the nodes that failed or had not answered, whose grant may
// still land (see stragglers).
func (q *quorum) undo(ctx context.Context, wg *sync.WaitGroup, votes []vote, o op) {
	u := o.undo()
	u.quiet = true
	granted := make([]bool, len(votes))
	unsure := make([]bool, len(votes))
	anyGranted, anyUnsure := false, false
	for i, v := range votes {
		switch {
		case v.answered && v.err == nil && v.r.code == acquired:
			granted[i], anyGranted = true, true
		case !v.answered || v.err != nil:
			unsure[i], anyUnsure = true, true
		}
	}
	if anyGranted {
		q.round(ctx, u, granted, nil)
	}
	if !anyUnsure || !q.c.track() {
		return
	}
	u.after = &stragglers{wg: wg, pending: unanswered(votes)}
	go func() {
		defer q.c.wg.Done()
		ctx, cancel := context.WithTimeout(context.Background(), o.ttl)
		defer cancel()
		q.round(ctx, u, unsure, nil)
	}()
}

// release releases on every node. It succeeds when a quorum had the lock;
// fewer mean it was lost already (ErrNotHeld, as reply code 0).
func (q *quorum) release(ctx context.Context, o op) (reply, error) {
	// Done once a quorum released it; the others finish in the background.
	votes, _ := q.round(ctx, o, nil, func(votes []vote) bool {
		yes, _ := count(votes, 1)
		return yes >= q.need && o.kind != opForceRelease
	})
	yes, failed := count(votes, 1)
	switch {
	case yes >= q.need:
		return reply{code: 1}, nil
	case o.kind == opForceRelease && yes > 0:
		return reply{code: 1}, nil
	case yes+failed >= q.need && failed > 0:
		return reply{}, q.error(o, fmt.Sprintf("%d of %d nodes released the lock, %d needed; %d failed", yes, len(votes), q.need, failed), votes)
	}
	return reply{code: 0}, nil
}

// refresh extends the lock on every node; it holds when a quorum did, in
// time.
func (q *quorum) refresh(ctx context.Context, o op) (reply, error) {
	sent := time.Now()
	votes, _ := q.round(ctx, o, nil, nil)
	yes, failed := count(votes, 1)
	switch {
	case yes >= q.need && time.Now().Before(sent.Add(o.ttl-drift(o.ttl))):
		return reply{code: 1}, nil
	case len(votes)-yes-failed > len(votes)-q.need:
		return reply{code: 0}, nil // a quorum said "not ours"
	}
	return reply{}, q.error(o, fmt.Sprintf("%d of %d nodes extended the lock in time, %d needed; %d failed", yes, len(votes), q.need, failed), votes)
}

// ttl is the least time to live of the nodes that hold the lock, if a
// quorum does.
func (q *quorum) ttl(ctx context.Context, o op) (reply, error) {
	votes, _ := q.round(ctx, o, nil, nil)
	yes, failed := count(votes, 1)
	if yes < q.need {
		if len(votes)-yes-failed > len(votes)-q.need {
			return reply{code: 0}, nil
		}
		return reply{}, q.error(o, fmt.Sprintf("%d of %d nodes hold the lock, %d needed; %d failed", yes, len(votes), q.need, failed), votes)
	}
	return reply{code: 1, value: leastTTL(votes, func(r reply) bool { return r.code == 1 })}, nil
}

// inspect reports the lock as a quorum sees it: held when a quorum holds
// the same token, with the least ttl and the largest fence among them.
func (q *quorum) inspect(ctx context.Context, o op) (reply, error) {
	votes, _ := q.round(ctx, o, nil, nil)
	_, failed := count(votes, 0)
	if len(votes)-failed < q.need {
		return reply{}, q.error(o, fmt.Sprintf("%d of %d nodes answered, %d needed", len(votes)-failed, len(votes), q.need), votes)
	}
	tokens := map[string]int{}
	r := reply{}
	for _, v := range votes {
		if !v.answered || v.err != nil {
			continue
		}
		r.fence = max(r.fence, v.r.fence)
		switch v.r.code {
		case 2:
			return reply{code: 2}, nil
		case 1:
			tokens[v.r.token]++
		}
	}
	for token, n := range tokens {
		if n >= q.need {
			r.code, r.token = 1, token
		}
	}
	if r.code == 1 {
		r.value = leastTTL(votes, func(v reply) bool { return v.code == 1 && v.token == r.token })
		r.fence = q.holderFence(votes, r.token)
	}
	return r, nil
}

// holderFence returns the fence of the holder of token, once a quorum of
// the nodes store it with the holder's tag (see raise_fence.lua): 0 until
// then, while its first Lock.Fence hands it out, and for a holder that
// never asked for one, whose nodes still keep an earlier holder's fence.
func (q *quorum) holderFence(votes []vote, token string) int64 {
	tag := fenceTag(token)
	var fence int64
	for _, v := range votes {
		if v.answered && v.err == nil && v.r.token == token && v.r.fenceTag == tag {
			fence = max(fence, v.r.fence)
		}
	}
	at := 0
	for _, v := range votes {
		if v.answered && v.err == nil && v.r.token == token && v.r.fenceTag == tag && v.r.fence == fence {
			at++
		}
	}
	if fence == 0 || at < q.need {
		return 0
	}
	return fence
}

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

// leastTTL returns the least time to live (value) among the answers that
// match, ignoring those without expiry; -1 if there is none, unknownTTL if
// the answers do not tell.
func leastTTL(votes []vote, match func(reply) bool) int64 {
	least := int64(-1)
	unknown := false
	for _, v := range votes {
		if !v.answered || v.err != nil || !match(v.r) {
			continue
		}
		switch {
		case v.r.value == unknownTTL:
			unknown = true
		case v.r.value >= 0 && (least < 0 || v.r.value < least):
			least = v.r.value
		}
	}
	if least < 0 && unknown {
		return unknownTTL
	}
	return least
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

// error returns a QuorumError for o that says how the nodes voted.
func (q *quorum) error(o op, summary string, votes []vote) error {
	e := &QuorumError{Op: o.kind.String(), Key: o.key(), Nodes: len(q.nodes), Quorum: q.need, summary: summary}
	for i, v := range votes {
		switch {
		case !v.answered && v.failing != nil:
			e.Errs = append(e.Errs, q.nodes[i].wrap(o.kind.String(), o.key(), fmt.Errorf("no answer before the round ended (node timeout %v); %w", q.timeout, v.failing)))
		case !v.answered:
			e.Errs = append(e.Errs, q.nodes[i].wrap(o.kind.String(), o.key(), fmt.Errorf("no answer before the round ended (node timeout %v)", q.timeout)))
		case v.err != nil:
			e.Errs = append(e.Errs, v.err)
		}
	}
	return e
}

// NewRedlock returns a Client whose locks live on a quorum of independent
// Redis nodes, as in the Redlock algorithm: a lock is obtained when a
// majority (N/2+1) of the nodes granted it within its validity, and it is
// lost when a majority no longer holds it. The nodes must not replicate one
// another. The Client and its Locks work as with New: Obtain, TryObtain, Do,
// Release, Refresh, TTL, auto-renew, Fence and the wake-ups: a waiter
// listens on enough nodes to share one with any quorum that releases. Fair
// mode (WithFair) needs a single deployment and is refused. Between
// wake-ups, waiters retry after their Backoff's delays, which are random as
// Redlock advises, so rivals fall out of step.
//
// Each round asks all nodes at once and waits for a node at most the node
// timeout (WithNodeTimeout), so a slow or dead minority does not slow an
// acquire down. An acquire is a plain SET NX on each node (pipelined with
// the upkeep of its side key), which does not tell a waiter how long the
// holder has left: between release messages it sleeps its Backoff's
// delays. The fence
// of a Redlock lock is handed out by the quorum at the first Lock.Fence, so
// fences increase across holders whatever quorums they get. See
// docs/safety.md for what Redlock assumes about clocks and restarts.
//
// As New does, NewRedlock adds a hook to each node's client, so that a
// node that had not answered when a round ended is reported with the last
// failure its client met, if any.
//
// NewRedlock returns an error wrapping ErrInvalidOption for an empty node
// list or the same client twice, ErrNilClient for a nil one.
func NewRedlock(nodes []redis.UniversalClient, opts ...Option) (*Client, error) {
	if len(nodes) == 0 {
		return nil, fmt.Errorf("%w: NewRedlock needs at least one node", ErrInvalidOption)
	}
	cfg, err := newClientConfig(opts)
	if err != nil {
		return nil, err
	}
	c := &Client{logger: cfg.logger, epoch: time.Now(), done: make(chan struct{})}
	c.renewer.c = c
	q := &quorum{c: c, need: len(nodes)/2 + 1, timeout: cfg.nodeTimeout, workers: workers{c: c, calls: make(chan nodeCall)}}
	seen := map[redis.UniversalClient]bool{}
	for i, rdb := range nodes {
		if isNil(rdb) {
			return nil, fmt.Errorf("%w: node %d of NewRedlock", ErrNilClient, i)
		}
		if seen[rdb] {
			return nil, fmt.Errorf("%w: node %d of NewRedlock is given twice", ErrInvalidOption, i)
		}
		seen[rdb] = true
	}
	for _, rdb := range nodes { // valid: newNode adds a hook to each
		n := newNode(rdb, cfg.ack)
		n.fenceless = true
		q.nodes = append(q.nodes, n)
		c.subs = append(c.subs, newSubscriber(rdb, c.logger))
	}
	c.quorum, c.nodes = q, q.nodes
	return c, nil
}

// QuorumError is the failure of a Redlock operation that did not get a
// quorum of answers: it says how the nodes voted, and holds each node's
// error (NodeError) for errors.Is and errors.As. An acquire that found the
// lock held is ErrNotObtained as long as the nodes that failed leave room
// for a quorum (at most N-Q of them); with more failed, it is a
// QuorumError, whatever the others said.
type QuorumError struct {
	Op      string // "acquire", "release", "refresh", "ttl", "inspect", "force-release"
	Key     string
	Nodes   int // how many nodes there are
	Quorum  int // how many must agree
	Granted int // how many did (refresh only; see the message otherwise)
	Errs    []error
	summary string
}

// Error says how the nodes voted, and why the failed ones failed.
func (e *QuorumError) Error() string {
	summary := e.summary
	if summary == "" {
		summary = fmt.Sprintf("%d of %d nodes agreed, %d needed", e.Granted, e.Nodes, e.Quorum)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "dlock: %s %s on a Redlock quorum: %s", e.Op, quoteKey(e.Key), summary)
	for i, err := range e.Errs {
		if i == 0 {
			b.WriteString(": ")
		} else {
			b.WriteString("; ")
		}
		b.WriteString(err.Error())
	}
	return b.String()
}

// Unwrap returns the errors of the nodes that failed.
func (e *QuorumError) Unwrap() []error { return e.Errs }
