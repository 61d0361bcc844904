package engine

import (
	"context"
	"fmt"
	"slices"
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
	own   *owner.Group // the Engine's
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
	case r.code == acquired:
		r.stragglers = round.NewStragglers(wg, votes) // nil when every node answered
	}
	return r, err
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
		granted[i] = v.Answered && v.Err == nil && v.R.code == acquired
	}
	if !time.Now().Before(sent.Add(o.ttl - drift(o.ttl))) {
		return reply{}, fmt.Errorf("%w: %s: a quorum granted it, but its validity ran out first: %v", ErrNotObtained, QuoteKey(o.key()), time.Since(sent))
	}
	return reply{code: acquired, granted: granted}, nil
}

// lose explains an acquire without a quorum: ErrNotObtained when another
// holder has it (Obtain waits for it), a QuorumError when too many nodes
// failed (see lost).
func (q *quorum) lose(o op, votes []vote, yes, failed int) (reply, error) {
	if q.lost(votes, true) == lostHeld {
		pttl := leastTTL(votes, func(r reply) bool { return r.code == held })
		if slices.ContainsFunc(votes, func(v vote) bool { return v.Answered && v.Err == nil && v.R.code == wrongType }) {
			return reply{code: wrongType}, nil
		}
		return reply{code: held, value: pttl}, nil
	}
	others, _ := count(votes, held)
	errored := 0 // answered with an error; the rest of failed had not answered yet
	for _, v := range votes {
		if v.Answered && v.Err != nil {
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
// still land (see round.Stragglers).
func (q *quorum) undo(ctx context.Context, wg *sync.WaitGroup, votes []vote, o op) {
	u := o.acq.undo(true)
	granted := make([]bool, len(votes))
	unsure := make([]bool, len(votes))
	anyGranted, anyUnsure := false, false
	for i, v := range votes {
		switch {
		case v.Answered && v.Err == nil && v.R.code == acquired:
			granted[i], anyGranted = true, true
		case !v.Answered || v.Err != nil:
			unsure[i], anyUnsure = true, true
		}
	}
	if anyGranted {
		q.round(ctx, u, granted, nil)
	}
	if !anyUnsure {
		return
	}
	u.after = round.NewStragglers(wg, votes)
	q.own.Go(func() {
		ctx, cancel := context.WithTimeout(context.Background(), o.ttl)
		defer cancel()
		q.round(ctx, u, unsure, nil)
	})
}

// release releases on every node. It succeeds when a quorum had the lock;
// fewer mean it was lost already (ErrNotHeld, as reply code notOurs).
func (q *quorum) release(ctx context.Context, o op) (reply, error) {
	return q.remove(ctx, o, false)
}

// forceRelease deletes the lock on every node, whoever holds it. It
// reports a lock deleted if any node had one.
func (q *quorum) forceRelease(ctx context.Context, o op) (reply, error) {
	return q.remove(ctx, o, true)
}

// remove is release, or with force forceRelease.
func (q *quorum) remove(ctx context.Context, o op, force bool) (reply, error) {
	// Done once a quorum released it; the others finish in the background.
	// A force release waits for every node.
	votes, _ := q.round(ctx, o, nil, func(votes []vote) bool {
		yes, _ := count(votes, ours)
		return yes >= q.need && !force
	})
	yes, failed := count(votes, ours)
	before, _ := count(votes, releasedBefore)
	switch {
	case yes >= q.need:
		return reply{code: ours}, nil
	case !force && yes+before >= q.need:
		return reply{code: releasedBefore}, nil // another release of the Lock took part
	case force && yes > 0:
		return reply{code: ours}, nil
	case force && slices.ContainsFunc(votes, func(v vote) bool { return v.Answered && v.Err == nil && v.R.code == stateWrongType }):
		return reply{code: stateWrongType}, nil
	case yes+failed >= q.need && failed > 0:
		return reply{}, q.error(o, fmt.Sprintf("%d of %d nodes released the lock, %d needed; %d failed", yes, len(votes), q.need, failed), votes)
	}
	return reply{code: notOurs}, nil
}

// refresh extends the lock on every node; it holds when a quorum did, in
// time.
func (q *quorum) refresh(ctx context.Context, o op) (reply, error) {
	sent := time.Now()
	votes, _ := q.round(ctx, o, nil, nil)
	yes, failed := count(votes, ours)
	switch {
	case yes >= q.need && time.Now().Before(sent.Add(o.ttl-drift(o.ttl))):
		return reply{code: ours}, nil
	case len(votes)-yes-failed > len(votes)-q.need:
		return reply{code: notOurs}, nil // a quorum said "not ours"
	}
	return reply{}, q.error(o, fmt.Sprintf("%d of %d nodes extended the lock in time, %d needed; %d failed", yes, len(votes), q.need, failed), votes)
}

// ttl is the least time to live of the nodes that hold the lock, if a
// quorum does.
func (q *quorum) ttl(ctx context.Context, o op) (reply, error) {
	votes, _ := q.round(ctx, o, nil, nil)
	yes, failed := count(votes, ours)
	if yes < q.need {
		if len(votes)-yes-failed > len(votes)-q.need {
			return reply{code: notOurs}, nil
		}
		return reply{}, q.error(o, fmt.Sprintf("%d of %d nodes hold the lock, %d needed; %d failed", yes, len(votes), q.need, failed), votes)
	}
	return reply{code: 1, value: leastTTL(votes, func(r reply) bool { return r.code == ours })}, nil
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
		if !v.Answered || v.Err != nil {
			continue
		}
		r.fence = max(r.fence, v.R.fence)
		switch v.R.code {
		case stateWrongType:
			return reply{code: stateWrongType}, nil
		case stateHeld:
			tokens[v.R.token]++
		}
	}
	if i := slices.IndexFunc(votes, func(v vote) bool { return v.Answered && v.Err == nil && v.R.kind != "" }); i >= 0 {
		return q.inspectShared(votes, votes[i].R), nil
	}
	for token, n := range tokens {
		if n >= q.need {
			r.code, r.token = stateHeld, token
		}
	}
	if r.code == stateHeld {
		r.value = leastTTL(votes, func(v reply) bool { return v.code == stateHeld && v.token == r.token })
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
		if v.Answered && v.Err == nil && v.R.token == token && v.R.fenceTag == tag {
			fence = max(fence, v.R.fence)
		}
	}
	at := 0
	for _, v := range votes {
		if v.Answered && v.Err == nil && v.R.token == token && v.R.fenceTag == tag && v.R.fence == fence {
			at++
		}
	}
	if fence == 0 || at < q.need {
		return 0
	}
	return fence
}

// inspectShared reports a shared hold as a quorum sees it: the holders
// that a quorum of the nodes hold, each with its least ttl there. Their
// fences are the nodes' own, no quorum's, so they are left out (0). some
// is one node's reply, for the kind and the limit.
func (q *quorum) inspectShared(votes []vote, some reply) reply {
	type seen struct {
		h     holderReply
		nodes int
	}
	byName := map[string]*seen{}
	var order []string
	for _, v := range votes {
		if !v.Answered || v.Err != nil {
			continue
		}
		for _, h := range v.R.holders {
			s := byName[h.token]
			if s == nil {
				s = &seen{h: h}
				byName[h.token] = s
				order = append(order, h.token)
			}
			s.nodes++
			s.h.pttl = min(s.h.pttl, h.pttl)
		}
	}
	r := reply{kind: some.kind, limit: some.limit, holders: []holderReply{}}
	for _, name := range order {
		if s := byName[name]; s.nodes >= q.need {
			s.h.fence = 0
			r.holders = append(r.holders, s.h)
		}
	}
	if len(r.holders) == 0 {
		return reply{}
	}
	slices.SortFunc(r.holders, func(a, b holderReply) int { return int(a.pttl - b.pttl) })
	r.code, r.token, r.value = stateHeld, r.holders[0].token, r.holders[0].pttl
	return r
}

// count tells how many votes have answered with code, and how many failed.
func count(votes []vote, code int64) (yes, failed int) {
	for _, v := range votes {
		switch {
		case !v.Answered || v.Err != nil:
			failed++
		case v.R.code == code:
			yes++
		}
	}
	return yes, failed
}

// mayHold reports whether a node may have granted the lock: it said so, or
// its answer is unknown.
func mayHold(v vote) bool {
	return !v.Answered || v.Err != nil || v.R.code == acquired
}

// pending counts the nodes that have not answered yet.
func (q *quorum) pending(votes []vote) int {
	n := 0
	for _, v := range votes {
		if !v.Answered {
			n++
		}
	}
	return n
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
		case !v.Answered:
			pending++
		case v.Err != nil:
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

// leastTTL returns the least time to live (value) among the answers that
// match, ignoring those without expiry; -1 if there is none, unknownTTL if
// the answers do not tell.
func leastTTL(votes []vote, match func(reply) bool) int64 {
	least := int64(-1)
	unknown := false
	for _, v := range votes {
		if !v.Answered || v.Err != nil || !match(v.R) {
			continue
		}
		switch {
		case v.R.value == unknownTTL:
			unknown = true
		case v.R.value >= 0 && (least < 0 || v.R.value < least):
			least = v.R.value
		}
	}
	if least < 0 && unknown {
		return unknownTTL
	}
	return least
}

// error returns a QuorumError for o that says how the nodes voted. The
// nodes that had not answered are named without telling Observers: their
// calls go on, and each tells of its own failure if it fails.
func (q *quorum) error(o op, summary string, votes []vote) error {
	e := &QuorumError{Op: o.name, Key: o.key(), Nodes: len(q.nodes), Quorum: q.need, summary: summary}
	for i, v := range votes {
		switch {
		case !v.Answered:
			err := fmt.Errorf("no answer before the round ended (node timeout %v)", q.timeout())
			if v.Failing != nil {
				err = fmt.Errorf("%w; %w", err, v.Failing)
			}
			e.Errs = append(e.Errs, q.nodes[i].errorOf(o.name, o.key(), err))
		case v.Err != nil:
			e.Errs = append(e.Errs, v.Err)
		}
	}
	return e
}

// run decides o on the quorum, by o's own rule.
func (q *quorum) run(ctx context.Context, o op) (reply, error) {
	if o.onQuorum == nil {
		return reply{}, fmt.Errorf("dlock: %s %s: not an operation of a Redlock quorum", o.name, QuoteKey(o.key()))
	}
	return o.onQuorum(q, ctx, o)
}
