package stock

import (
	"context"

	"github.com/redis/go-redis/v9"

	"github.com/dlock-go/dlock/internal/redisclient"
)

// batchLanes is how many batches of script runs of one Inventory are in
// flight at once (see internal/batch). One: the calls that come while a
// batch is out wait for it and go out together, and since the calls of one
// sku in a batch cost Redis one script (merge.go), bigger batches cost it
// less per call. In the flash sale (bench/cmd/sale, 2026-11-25) one lane
// sold 1.12 to 1.23 times as fast as two, four runs of four, with less CPU
// per buyer on both sides: with two lanes, a call that found the second one
// free often went alone, as a script of its own.
const batchLanes = 1

// scriptRun is one run of a script with its KEYS and ARGV, sent alone or in
// a batch, and its reply.
type scriptRun struct {
	s    script
	keys []string
	args []any
	cmd  *redis.Cmd // the reply, or the error, once sent
	// parts: the calls a run of a *_each.lua script makes, whose replies
	// it carries (merge.go)
	parts []*scriptRun
}

// evalCmd returns the EVALSHA of r, or with withSource its EVAL.
func (r *scriptRun) evalCmd(ctx context.Context, withSource bool) *redis.Cmd {
	argv := make([]any, 0, 3+len(r.keys)+len(r.args))
	if withSource {
		argv = append(argv, "eval", r.s.src)
	} else {
		argv = append(argv, "evalsha", r.s.hash)
	}
	argv = append(argv, len(r.keys))
	for _, k := range r.keys {
		argv = append(argv, k)
	}
	argv = append(argv, r.args...)
	cmd := redis.NewCmd(ctx, argv...)
	cmd.SetFirstKeyPos(3) // a Cluster, or a Ring, routes it by its first key
	return cmd
}

// send runs runs on Redis: one alone, several as one pipeline (a Cluster's
// or a Ring's pipeline sends each to the node of its keys). Each gets its
// own reply or error. Those whose script the server lacks go again with
// EVAL, which loads it.
func (inv *Inventory) send(ctx context.Context, runs []*scriptRun) {
	inv.sendCmds(ctx, runs, false, func(*scriptRun) bool { return true })
	inv.sendCmds(ctx, runs, true, func(r *scriptRun) bool { return redisclient.NoScript(r.cmd.Err()) })
}

// sendCmds sends the runs that which picks, as EVALSHA or EVAL.
func (inv *Inventory) sendCmds(ctx context.Context, runs []*scriptRun, withSource bool, which func(*scriptRun) bool) {
	var pipe redis.Pipeliner
	var first *scriptRun
	for _, r := range runs {
		if !which(r) {
			continue
		}
		r.cmd = r.evalCmd(ctx, withSource)
		switch {
		case first == nil:
			first = r
		case pipe == nil:
			pipe = inv.rdb.Pipeline()
			_ = pipe.Process(ctx, first.cmd)
			fallthrough
		default:
			_ = pipe.Process(ctx, r.cmd)
		}
	}
	switch {
	case pipe != nil:
		_, _ = pipe.Exec(ctx) // each command keeps its own reply or error
	case first != nil:
		_ = inv.rdb.Process(ctx, first.cmd)
	}
}
