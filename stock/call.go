package stock

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/dlock-go/dlock/internal/aclhint"
	"github.com/dlock-go/dlock/internal/owner"
)

// call is one operation of the Inventory: a script, what it is about (for
// its errors), its KEYS and its ARGV after the header (header).
type call struct {
	inv   *Inventory
	op    string   // "reserve", "commit", ...: the verb of its errors
	skus  []string // three KEYS each, in this order
	qty   []int64  // what each sku is asked for, if anything: for ErrSoldOut's message
	order string
	// keys: three per sku, then, for a call that changes the stock, the key
	// of its record (resend.go)
	keys []string
	args []any
	// changes: the call may change the stock, so it has a record key, and
	// once it is sent, an error without a reply leaves its outcome unknown
	changes bool
	// batched: the call may go out in one pipeline with others of the
	// Inventory (internal/batch). go-redis sends a whole pipeline again
	// when its connection fails, replies read already included, and every
	// script that changes the stock is harmless to run twice (resend.go).
	batched bool
}

// newCall returns a call of op on skus; with changes, one that may change
// them, with an id of its own.
func (inv *Inventory) newCall(op, order string, skus []string, changes bool, args ...any) *call {
	c := &call{inv: inv, op: op, skus: skus, order: order, args: args, changes: changes}
	c.keys = make([]string, 0, keysPerSKU*len(skus)+1)
	for _, sku := range skus {
		c.keys = skuKeys(c.keys, inv.prefix, sku)
	}
	if changes {
		c.keys = append(c.keys, callKey(inv.prefix, skus[0], inv.ids.next()))
	}
	return c
}

// headerArgs is how many ARGV every script takes first (lua/prelude.lua):
// the retention and the resend window in ms, and the number of skus.
const headerArgs = 3

// header returns the first ARGV of a script on n skus.
func (inv *Inventory) header(n int) []any {
	if n == 1 {
		return inv.header1
	}
	return append(slices.Clip(inv.header1[:headerArgs-1]), strconv.Itoa(n))
}

// run runs s until it stops asking to be called again, and turns its
// reply's code into an error.
func (c *call) run(ctx context.Context, s script) (reply, error) {
	args := slices.Concat(c.inv.header(len(c.skus)), c.args)
	r, sent, err := c.inv.bounded(ctx, func(ctx context.Context) (reply, error) {
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
		err = aclhint.Wrap(err, aclhint.Rules{Keys: "~" + c.inv.prefix + "*, the keys of the stock"})
	}
	switch {
	case err == nil:
		return r, c.replyError(r)
	case aclhint.Refused(err):
		// refused before it ran: nothing changed
	case sent && c.changes:
		return r, fmt.Errorf("%w: %s %s: %w", ErrOutcomeUnknown, c.op, c.about(), err)
	}
	return r, fmt.Errorf("stock: %s %s: %w", c.op, c.about(), err)
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

// errNoAnswer is the error of a call whose context ended before its answer.
var errNoAnswer = errors.New("no answer before the context ended")

// bounded runs fn and returns its result, or returns when ctx ends,
// whichever comes first; sent says whether fn started. go-redis bounds a
// stalled read by its ReadTimeout, and by the context only if
// ContextTimeoutEnabled is set, and then only by its deadline; bounded
// makes every call answer by its context anyway. fn then runs in a
// goroutine that Close waits for, without the context's cancellation, so
// that it finishes.
func (inv *Inventory) bounded(ctx context.Context, fn func(context.Context) (reply, error)) (r reply, sent bool, err error) {
	if ctx.Err() != nil {
		return reply{}, false, context.Cause(ctx)
	}
	if ctx.Done() == nil { // a context that never ends: no goroutine needed
		if !inv.calls.Add(1) {
			return reply{}, false, ErrClosed
		}
		defer inv.calls.Done()
		r, err := fn(ctx)
		return r, true, err
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
		return reply{}, false, ErrClosed
	case !answered:
		return reply{}, true, fmt.Errorf("%w: %w", errNoAnswer, context.Cause(ctx))
	}
	return res.r, true, res.err
}
