package engine

import (
	"context"
	"time"
)

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
	kind    *Kind
	keys    []string
	token   any
	granted []bool // nodes that granted the lock
}

// run hands out the fence, and returns it with true once a quorum holds
// it; 0 and false if that fails.
func (f *fenceRaise) run(ctx context.Context) (int64, bool) {
	need := f.q.need
	o := f.op(0)
	votes, _ := f.q.round(ctx, o, f.granted, func(votes []vote) bool {
		n, _ := count(votes, ours)
		return n >= need
	})
	var fence int64
	for _, v := range votes {
		if v.Answered && v.Err == nil && v.R.code == ours {
			fence = max(fence, v.R.value)
		}
	}
	at := 0 // nodes that hold the fence already
	lower := make([]bool, len(votes))
	for i, v := range votes {
		if v.Answered && v.Err == nil && v.R.code == ours {
			if v.R.value == fence {
				at++
			} else {
				lower[i] = true
			}
		}
	}
	if n, _ := count(votes, ours); n < need {
		return 0, false
	}
	if at < need {
		o = f.op(fence)
		raised, _ := f.q.round(ctx, o, lower, func(votes []vote) bool {
			n, _ := count(votes, ours)
			return at+n >= need
		})
		if n, _ := count(raised, ours); at+n < need {
			return 0, false
		}
	}
	return fence, true
}

// op returns the raise of the fence on a node: fence 0 hands one out, any
// other stores it (see raise_fence.lua).
func (f *fenceRaise) op(fence int64) op {
	return raiseFenceOp(f.kind, f.keys, f.token, fence, 0)
}

// raiseFenceOp returns the raise of the fence of the holding of kind with
// keys by token: fence 0 hands one out, any other stores it (see
// raise_fence.lua); ttl, on one deployment, is the lock's.
func raiseFenceOp(kind *Kind, keys []string, token any, fence int64, ttl time.Duration) op {
	return withArgs(op{name: "acquire", keys: kind.scriptKeys(keys)}, kind.raiseFence, nil, raiseFenceArgv{holder: token, fence: fence, tag: fenceTag(token), ttl: ttl.Milliseconds()})
}
