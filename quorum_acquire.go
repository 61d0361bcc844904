package dlock

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/dlock-go/dlock/internal/round"
)

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
		return reply{}, fmt.Errorf("%w: %s: a quorum granted it, but its validity ran out first: %v", ErrNotObtained, quoteKey(o.key()), time.Since(sent))
	}
	return reply{code: acquired, raise: &fenceRaise{q: q, kind: o.acq.kind, keys: o.acq.keys, token: o.acq.arg, granted: granted}}, nil
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
