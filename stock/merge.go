package stock

import (
	"context"
	"fmt"

	"github.com/redis/go-redis/v9"
)

// maxEach is the most calls that one run of a *_each.lua script makes, so
// that no run keeps Redis busy for long; a batch with more calls of one sku
// sends several.
const maxEach = 100

// sendBatch runs a batch of the Inventory's calls (the Batcher's run). The
// Reserves of one sku in it go out as one run of reserve_each.lua, and its
// Commits and Cancels as one run of settle_each.lua (those of a single sku
// each; a cart's go as they came). A merged run takes the place of its
// first call, and makes its calls one after the other in the order they
// came. The batch then runs a sku's Reserves and its Commits and Cancels
// in two groups, not interleaved as they came: its calls were all in
// flight at once, so that is an order they could have run in. Redis then
// looks at the sku and writes it once, and runs one script instead of
// many, which is most of a call's cost on the server. Each call still gets
// its own reply.
func (inv *Inventory) sendBatch(ctx context.Context, runs []*scriptRun) {
	merged := mergeRuns(runs)
	if merged == nil {
		inv.send(ctx, runs)
		return
	}
	inv.send(ctx, merged)
	for _, r := range merged {
		r.split(ctx)
	}
}

// mergeRuns returns runs with the single-sku calls of each sku and kind
// (reserve, or commit and cancel) merged into one run of the kind's
// *_each.lua script, in the place of the first; or nil when no two calls
// merge.
func mergeRuns(runs []*scriptRun) []*scriptRun {
	if len(runs) < 2 {
		return nil
	}
	type group struct{ each, level string } // the *_each.lua script's hash, the sku's level key
	out := make([]*scriptRun, 0, len(runs))
	first := make(map[group]int) // where in out the group's run takes more
	for _, r := range runs {
		each, ok := r.each()
		if !ok {
			out = append(out, r)
			continue
		}
		g := group{each.hash, r.keys[0]}
		at, ok := first[g]
		if !ok {
			first[g] = len(out)
			out = append(out, r)
			continue
		}
		m := out[at]
		if m.parts == nil { // the group's second call: merge the two
			n := min(len(runs), maxEach)
			keys := make([]string, 0, keysPerSKU+n)
			args := make([]any, 0, headerArgs+(len(m.args)-headerArgs)*n)
			m = &scriptRun{s: each, keys: append(keys, m.keys...), args: append(args, m.args...), parts: []*scriptRun{m}}
			out[at] = m
		}
		m.parts = append(m.parts, r)
		m.keys = append(m.keys, r.keys[keysPerSKU]) // the call's record
		m.args = append(m.args, r.args[headerArgs:]...)
		if len(m.parts) == maxEach {
			delete(first, g)
		}
	}
	if len(out) == len(runs) {
		return nil
	}
	return out
}

// each returns the script that makes r's call with others of its sku: for
// a Reserve of one sku (its KEYS: the sku's and its record; its ARGV: the
// header, the order, the hold and the quantity), reserve_each.lua; for a
// Commit or Cancel of one sku (the header, the order and the outcome),
// settle_each.lua.
func (r *scriptRun) each() (script, bool) {
	if len(r.keys) != keysPerSKU+1 {
		return script{}, false
	}
	switch {
	case r.s.hash == reserveScript.hash && len(r.args) == headerArgs+3:
		return reserveEachScript, true
	case r.s.hash == settleScript.hash && len(r.args) == headerArgs+2:
		return settleEachScript, true
	}
	return script{}, false
}

// split gives each call merged into r its own reply, from r's list of them,
// or r's error; a run not merged has its reply already.
func (r *scriptRun) split(ctx context.Context) {
	if r.parts == nil {
		return
	}
	replies, err := r.cmd.Slice()
	if err == nil && len(replies) != len(r.parts) {
		err = fmt.Errorf("stock: unexpected reply of %d items to %d calls", len(replies), len(r.parts))
	}
	for i, p := range r.parts {
		p.cmd = redis.NewCmd(ctx)
		if err != nil {
			p.cmd.SetErr(err)
		} else {
			p.cmd.SetVal(replies[i])
		}
	}
}
