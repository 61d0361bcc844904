package dlock

import (
	"context"
	"fmt"
	"slices"
	"time"
)

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
