package engine

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/dlock-go/dlock/internal/renew"
)

// A multi-key holding whose keys are in several slots of a Redis Cluster,
// where one script touches the keys of one slot only. The holding's keys
// are grouped by slot, and the groups are taken in one fixed order, by
// ascending slot number, one multi_acquire.lua per group, with the same
// token. When a group is held by another, the groups taken before it are
// released at once, and the attempt has failed as a whole: the caller
// holds nothing while it waits (no hold-and-wait), so callers that name
// the same keys in other orders never deadlock, and a waiter tries again
// from the first group. Each group's acquire hands out a fence larger than
// its own keys' earlier holders'; the holding's fence is the largest of
// them, stored back on every group where the token still holds
// (multi_store_fence.lua), and handed out only if every group stored it.
//
// After the acquire, the holding's other scripts (release, refresh,
// ReleaseAfter, ttl, the renewer's refresh) run once per group too, and
// their replies combine (see Engine.runPerSlot): the holding is the
// caller's while every group is, and a group found gone or taken is a
// holding lost, whose other groups are then released.

// takeMulti makes one attempt a to take the locks of a multi-key holding:
// slot after slot when they are in several slots of a Cluster
// (multiTrySlots), else in one script (multiTry).
func (e *Engine) takeMulti(ctx context.Context, a attempt, cfg Config) (*Hold, reply, error) {
	if e.cluster {
		if groups := slotGroups(multiLockKeys(a.keys)); len(groups) > 1 {
			return e.multiTrySlots(ctx, a, groups, cfg)
		}
	}
	return e.multiTry(ctx, a, cfg)
}

// multiTrySlots is multiTry for keys in several Cluster slots, groups (see
// slotGroups): it takes the groups one after the other, and on the first
// that it cannot take, releases those it took.
func (e *Engine) multiTrySlots(ctx context.Context, a attempt, groups [][]int, cfg Config) (*Hold, reply, error) {
	sent := time.Now()
	whole := e.multiOp(a)
	a.keyArgs = whole.keyArgs() // for the Hold's calls, and for the take-back
	var fence int64
	for i, group := range groups {
		part := whole.slotPart(group)
		// What a late reply, or too few replicas (WithReplicaAck), takes
		// back: this group; the groups before it are taken back below.
		part.acq.keys, part.acq.keyArgs = part.keys, nil
		r, err := e.call(ctx, part)
		if err == nil && r.code == acquired {
			fence = max(fence, r.value)
			continue
		}
		switch {
		case err != nil && (replyLost(err) || ctx.Err() != nil):
			e.releaseInBackground(a) // this group's script may have run, or will
		case i > 0:
			e.rollBack(ctx, a)
		}
		if err != nil {
			return nil, r, err
		}
		return nil, r, multiRefusal(a, r)
	}
	r, err := e.call(ctx, e.storeFenceOp(a, fence))
	switch {
	case err != nil:
		e.releaseInBackground(a)
		return nil, r, err
	case r.code != ours:
		// A group expired or was taken since its acquire; the groups still
		// ours are released (see runPerSlot).
		return nil, r, fmt.Errorf("%w: a key of %s and %d more was lost before all of them were taken", ErrNotObtained, QuoteKey(a.keys[0]), len(multiLockKeys(a.keys))-1)
	}
	h, err := e.hold(a, reply{code: acquired, value: fence}, sent, cfg)
	return h, r, err
}

// rollBack releases the groups a multi-key attempt took before it found
// one held, before its caller goes on: another caller may wait for them.
// If the release does not answer, it goes on in the background.
func (e *Engine) rollBack(ctx context.Context, a attempt) {
	if _, err := e.call(ctx, a.undo(false)); err != nil {
		e.releaseInBackground(a)
	}
}

// storeFenceArgv is multi_store_fence.lua's ARGV.
type storeFenceArgv struct {
	holder any
	fence  int64
}

func (storeFenceArgv) count() int { return 2 }

func (a storeFenceArgv) appendTo(args []any) []any { return append(args, a.holder, a.fence) }

// storeFenceOp stores fence on every key of the multi-key attempt a.
func (e *Engine) storeFenceOp(a attempt, fence int64) op {
	return withArgs(op{name: "acquire", keys: a.keys}, multiStoreFenceScript, a.keyArgs, storeFenceArgv{holder: a.arg, fence: fence})
}

// refreshSlotted refreshes, for the renewer, the multi-key holdings among
// locks whose keys are in several Cluster slots, each with its own calls
// (see runPerSlot), in goroutines that wg waits for, and returns the other
// locks, for one pipeline per server.
func (e *Engine) refreshSlotted(ctx context.Context, wg *sync.WaitGroup, locks []*renewedHold, record func([]*renewedHold, []renew.Result)) []*renewedHold {
	var slotted []*renewedHold
	rest := locks
	for i, l := range locks {
		if l.kind.allKeys && spansSlots(multiLockKeys(l.keys)) {
			if slotted == nil {
				rest = slices.Clone(locks[:i])
			}
			slotted = append(slotted, l)
		} else if slotted != nil {
			rest = append(rest, l)
		}
	}
	if slotted == nil {
		return locks
	}
	for _, l := range slotted {
		wg.Go(func() { // each apart: a primary that does not answer holds up its own holdings only
			h := l.lock()
			var res renew.Result
			r, err := e.run(ctx, h.refreshOp(l.renewal.Sent()))
			switch {
			case err != nil:
				res.Err = err
			case r.code == ours:
				res.Held = true
			case r.code == releasedBefore:
				h.end(ErrReleased) // by a Release whose answer did not come back
			}
			record([]*renewedHold{l}, []renew.Result{res})
		})
	}
	return rest
}
