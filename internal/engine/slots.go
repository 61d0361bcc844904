package engine

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/dlock-go/dlock/internal/slot"
)

// The scripts of a multi-key holding whose keys are in several slots of a
// Redis Cluster run once per slot, each on the keys of its slot, and their
// replies combine into one (see multi_slots.go).

// multiBlocks is how many KEYS a multi-key holding's scripts take per lock
// key: the key, its fence key, its release marker, its holding key (see
// multi.go).
const multiBlocks = 4

// slotGroups returns the positions of keys grouped by Cluster slot, the
// groups in ascending order of their slot, the positions in each in the
// order of keys.
func slotGroups(keys []string) [][]int {
	slots := make([]int, len(keys))
	for i, key := range keys {
		slots[i] = slot.Of(key)
	}
	order := make([]int, len(keys))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int { return slots[a] - slots[b] })
	var groups [][]int
	for i, at := range order {
		if i == 0 || slots[at] != slots[order[i-1]] {
			groups = append(groups, nil)
		}
		groups[len(groups)-1] = append(groups[len(groups)-1], at)
	}
	return groups
}

// spansSlots reports whether keys are in more than one Cluster slot.
func spansSlots(keys []string) bool {
	if len(keys) < 2 {
		return false
	}
	first := slot.Of(keys[0])
	for _, key := range keys[1:] {
		if slot.Of(key) != first {
			return true
		}
	}
	return false
}

// slotPart returns o, an op of a multi-key holding (KEYS: multiBlocks
// blocks, the lock keys, their fence keys...), for the lock keys at the
// positions group only, with the same ARGV.
func (o op) slotPart(group []int) op {
	n := len(o.keys) / multiBlocks
	keys := make([]string, 0, multiBlocks*len(group))
	for block := range multiBlocks {
		for _, i := range group {
			keys = append(keys, o.keys[block*n+i])
		}
	}
	tail := o.argv[3+len(o.keys):]
	argv := make([]any, 0, 3+len(keys)+len(tail))
	argv = append(argv, o.argv[0], o.argv[1], len(keys))
	for _, key := range keys {
		argv = append(argv, key)
	}
	argv = append(argv, tail...)
	o.keys, o.argv = keys, argv
	return o
}

// runPerSlot runs o, a script of a multi-key holding, once per Cluster
// slot of its keys (once if they share one), and combines the replies: ours
// when every group answered ours, with the least non-negative value (a
// ttl) or -1; notOurs when some group was not the caller's any more, after
// releasing the groups that still were (the holding is lost); else
// releasedBefore when some group was released by another release of the
// holding; an error when a group did not answer and none was found lost.
func (e *Engine) runPerSlot(ctx context.Context, o op) (reply, error) {
	n := len(o.keys) / multiBlocks
	if n == 0 || !spansSlots(o.keys[:n]) {
		return e.node.run(ctx, o)
	}
	combined := reply{code: ours, value: -1}
	lost := false
	var mine [][]int // the groups that answered ours
	var errs []error
	for _, group := range slotGroups(o.keys[:n]) {
		r, err := e.node.run(ctx, o.slotPart(group))
		switch {
		case err != nil:
			errs = append(errs, err)
		case r.code == ours:
			mine = append(mine, group)
			if r.value >= 0 && (combined.value < 0 || r.value < combined.value) {
				combined.value = r.value
			}
		case r.code == notOurs:
			lost = true
		case r.code == releasedBefore:
			combined.code = releasedBefore
		default:
			errs = append(errs, e.node.wrap(o.name, o.key(), fmt.Errorf("unexpected script reply code %d", r.code)))
		}
	}
	switch {
	case lost:
		if o.script != multiReleaseScript && len(mine) > 0 {
			e.releaseSlots(ctx, o, mine)
		}
		return reply{code: notOurs}, nil
	case len(errs) > 0:
		return reply{}, errors.Join(errs...)
	case combined.code == releasedBefore:
		combined.value = 0
	}
	return combined, nil
}

// releaseSlots releases the groups of a multi-key holding that o found
// still the caller's after another group was found lost, so that they hold
// nobody up until they expire. ARGV[1] of every multi-key script is the
// holder's token.
func (e *Engine) releaseSlots(ctx context.Context, o op, groups [][]int) {
	token := o.argv[3+len(o.keys)]
	undo := withArgs(op{name: "release", keys: o.keys}, multiReleaseScript, nil, releaseArgv{holder: token, call: takeBack, releaseSetting: e.releaseSetting()})
	for _, group := range groups {
		if _, err := e.node.run(ctx, undo.slotPart(group)); err != nil {
			e.logger.Warn("dlock: could not release the rest of a lost multi-key holding; it expires by itself",
				"key", QuoteKey(o.key()), "error", err)
		}
	}
}
