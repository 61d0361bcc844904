package stock

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/dlock-go/dlock/internal/owner"
)

// call is one operation of the Inventory: a script, what it is about (for
// its errors), its KEYS and its ARGV after the retention.
type call struct {
	inv   *Inventory
	op    string   // "reserve", "commit", ...: the verb of its errors
	skus  []string // three KEYS each, in this order
	qty   []int64  // what each sku is asked for, if anything: for ErrSoldOut's message
	order string
	keys  []string
	args  []any
	// batched: the call may go out in one pipeline with others of the
	// Inventory (internal/batch). Only calls that are harmless to run
	// twice are: go-redis sends a whole pipeline again when its connection
	// fails, replies read already included.
	batched bool
}

func (inv *Inventory) newCall(op, sku, order string, keys []string, args ...any) *call {
	return &call{inv: inv, op: op, skus: []string{sku}, order: order, keys: keys, args: args}
}

// run runs s until it stops asking to be called again, and turns its
// reply's code into an error.
func (c *call) run(ctx context.Context, s script) (reply, error) {
	args := slices.Concat(c.inv.retention[:1], c.args)
	r, err := c.inv.bounded(ctx, func(ctx context.Context) (reply, error) {
		for {
			run := &scriptRun{s: s, keys: c.keys, args: args}
			if c.batched {
				c.inv.batch.Do(ctx, run)
			} else {
				c.inv.send(ctx, []*scriptRun{run})
			}
			v, err := run.cmd.Slice()
			if err != nil {
				return reply{}, err
			}
			r, err := parseReply(v)
			// Each codeAgain returned a batch of expired holds to the
			// stock, so this ends: at the latest when none is left.
			if err != nil || r.code != codeAgain {
				return r, err
			}
		}
	})
	if err != nil {
		return r, fmt.Errorf("stock: %s %s: %w", c.op, c.about(), err)
	}
	return r, c.replyError(r)
}

// about names the skus and the order of the call, for its errors.
func (c *call) about() string {
	var b strings.Builder
	for i, sku := range c.skus {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(strconv.Quote(sku))
	}
	if c.order != "" {
		fmt.Fprintf(&b, " for order %q", c.order)
	}
	return b.String()
}

// bounded runs fn and returns its result, or returns when ctx ends,
// whichever comes first. go-redis bounds a stalled read by its ReadTimeout,
// and by the context only if ContextTimeoutEnabled is set, and then only by
// its deadline; bounded makes every call answer by its context anyway. fn
// then runs in a goroutine that Close waits for, without the context's
// cancellation, so that it finishes.
func (inv *Inventory) bounded(ctx context.Context, fn func(context.Context) (reply, error)) (reply, error) {
	if inv.err != nil {
		return reply{}, inv.err
	}
	if ctx.Err() != nil {
		return reply{}, context.Cause(ctx)
	}
	if ctx.Done() == nil { // a context that never ends: no goroutine needed
		if !inv.calls.Add(1) {
			return reply{}, ErrClosed
		}
		defer inv.calls.Done()
		return fn(ctx)
	}
	type result struct {
		r   reply
		err error
	}
	res, answered, started := owner.Await(inv.calls, ctx.Done(), func() result {
		r, err := fn(context.WithoutCancel(ctx))
		return result{r, err}
	})
	switch {
	case !started:
		return reply{}, ErrClosed
	case !answered:
		return reply{}, fmt.Errorf("no answer before the context ended, so it may still happen: %w", context.Cause(ctx))
	}
	return res.r, res.err
}
