package stock_test

import (
	"context"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/dlock-go/dlock/stock"
)

// stockCall is one call of a random sequence on one sku.
type stockCall struct {
	op    string // "reserve", "commit" or "cancel"
	order string
	qty   int64
}

func (c stockCall) run(ctx context.Context, inv *stock.Inventory, sku string) error {
	switch c.op {
	case "reserve":
		return inv.Reserve(ctx, sku, c.order, c.qty, time.Minute)
	case "commit":
		return inv.Commit(ctx, sku, c.order)
	default:
		return inv.Cancel(ctx, sku, c.order)
	}
}

// randomCalls returns n calls of a few orders, so that they meet: retries,
// conflicts, settles of orders held, settled or never reserved.
func randomCalls(r *rand.Rand, n int) []stockCall {
	ops := []string{"reserve", "reserve", "commit", "cancel"}
	calls := make([]stockCall, n)
	for i := range calls {
		calls[i] = stockCall{op: ops[r.IntN(len(ops))], order: string(rune('a' + r.IntN(4))), qty: int64(1 + r.IntN(3))}
	}
	return calls
}

// mergedOrder is the order a batch of calls on one sku runs in: the
// Reserves in one script where the first came, the Commits and Cancels in
// another where the first of them came; each in the order they came.
func mergedOrder(calls []stockCall) []int {
	var reserves, settles []int
	for i, c := range calls {
		if c.op == "reserve" {
			reserves = append(reserves, i)
		} else {
			settles = append(settles, i)
		}
	}
	if len(settles) > 0 && (len(reserves) == 0 || settles[0] < reserves[0]) {
		return append(settles, reserves...)
	}
	return append(reserves, settles...)
}

// A batch of random calls on one sku, made by the merged scripts, gives
// each call the answer it gets made alone, one after the other in the
// order the batch runs them, and leaves the sku and its orders as they
// leave it: the *_each.lua scripts make each call as reserve.lua and
// settle.lua do.
func TestBatchMatchesCallsAlone(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for run := range uint64(40) {
		r := rand.New(rand.NewPCG(run, 13))
		_, l, inv := withLanes(t)
		batched, alone := testSKU(t, "batched"), testSKU(t, "alone")
		stockQty := int64(2 + r.IntN(6))
		before := randomCalls(r, r.IntN(4)) // a history, made alone on both
		calls := randomCalls(r, 2+r.IntN(11))
		for _, sku := range []string{batched, alone} {
			mustSet(t, inv, sku, stockQty)
			for _, c := range before {
				_ = c.run(ctx, inv, sku)
			}
		}

		letGo := l.hold(t, inv, batched)
		got := make([]<-chan error, len(calls))
		for i, c := range calls {
			got[i] = queue(t, inv, i+1, func() error { return c.run(ctx, inv, batched) })
		}
		letGo()
		want := make([]error, len(calls))
		for _, i := range mergedOrder(calls) {
			want[i] = calls[i].run(ctx, inv, alone)
		}

		same := func(a, b error) bool {
			if a == nil || b == nil {
				return a == nil && b == nil
			}
			return strings.ReplaceAll(a.Error(), batched, "SKU") == strings.ReplaceAll(b.Error(), alone, "SKU")
		}
		for i, errc := range got {
			if err := <-errc; !same(err, want[i]) {
				t.Errorf("run %d: call %d %+v in a batch = %v, made alone = %v (calls %+v)", run, i, calls[i], err, want[i], calls)
			}
		}
		if b, a := levels(t, inv, batched), levels(t, inv, alone); b != a {
			t.Errorf("run %d: levels %+v after the batch, %+v after the calls alone (calls %+v)", run, b, a, calls)
		}
		// The orders' states: a Reserve of 1 and a Commit of each tell them.
		for _, order := range []string{"a", "b", "c", "d"} {
			for _, probe := range []stockCall{{"commit", order, 0}, {"reserve", order, 1}} {
				if b, a := probe.run(ctx, inv, batched), probe.run(ctx, inv, alone); !same(b, a) {
					t.Errorf("run %d: order %s after the batch: %s = %v, after the calls alone: %v", run, order, probe.op, b, a)
				}
			}
		}
		if sent := l.sent(); len(sent) != 1 || !slices.Equal(sent[0], ordersIn(calls, mergedOrder(calls))) {
			t.Errorf("run %d: batches %v, want one of the calls in the order %v", run, sent, mergedOrder(calls))
		}
	}
}

// ordersIn returns the orders of calls in the order given by index.
func ordersIn(calls []stockCall, index []int) []string {
	orders := make([]string, len(index))
	for i, j := range index {
		orders[i] = calls[j].order
	}
	return orders
}
