package stock

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/redis/go-redis/v9"
)

// reserveRun returns the run of a Reserve of sku for order, as call.run
// makes it.
func reserveRun(sku, order string) *scriptRun {
	return &scriptRun{s: reserveScript, keys: withRecord(sku, order), args: []any{"86400000", "60000", "1", order, "60000", "1"}}
}

// withRecord returns the KEYS of a call on sku: the sku's, and a record
// named after the order.
func withRecord(sku, order string) []string {
	return append(skuKeys(nil, "stock", sku), callKey("stock", sku, order))
}

// describe names the runs of a batch: "order" for one alone, "sku:a+b" for
// a merged run of the orders a and b.
func describe(runs []*scriptRun) []string {
	var names []string
	for _, r := range runs {
		if r.parts == nil {
			names = append(names, fmt.Sprint(r.args[headerArgs]))
			continue
		}
		name := fmt.Sprint(r.keys[0], ":")
		for i, p := range r.parts {
			if i > 0 {
				name += "+"
			}
			name += fmt.Sprint(p.args[headerArgs])
		}
		names = append(names, name)
	}
	return names
}

// settleRun returns the run of a Commit ("sold") or Cancel ("cancelled")
// of sku for order.
func settleRun(sku, order, outcome string) *scriptRun {
	return &scriptRun{s: settleScript, keys: withRecord(sku, order), args: []any{"86400000", "60000", "1", order, outcome}}
}

func TestMergeRuns(t *testing.T) {
	shirt := func(order string) *scriptRun { return reserveRun("shirt", order) }
	socks := func(order string) *scriptRun { return reserveRun("socks", order) }
	cart := &scriptRun{s: reserveScript, keys: slices.Concat(skuKeys(nil, "stock", "{t}a"), withRecord("{t}b", "cart")), args: []any{"86400000", "60000", "2", "cart", "60000", "1", "1"}}
	cartCommit := &scriptRun{s: settleScript, keys: cart.keys, args: []any{"86400000", "60000", "2", "cart", "sold"}}
	level := skuKeys(nil, "stock", "shirt")[0]

	if got := mergeRuns([]*scriptRun{shirt("a")}); got != nil {
		t.Errorf("one run: %v, want nil", describe(got))
	}
	if got := mergeRuns([]*scriptRun{shirt("a"), socks("b"), settleRun("shirt", "c", "sold"), cart, cartCommit, cart}); got != nil {
		t.Errorf("no two calls of a kind on one sku: %v, want nil", describe(got))
	}
	got := mergeRuns([]*scriptRun{
		settleRun("shirt", "c", "sold"), shirt("a"), socks("b"), cart, shirt("c"),
		settleRun("shirt", "d", "cancelled"), shirt("a"), cartCommit, cartCommit,
	})
	if want := []string{level + ":c+d", level + ":a+c+a", "b", "cart", "cart", "cart"}; !slices.Equal(describe(got), want) {
		t.Errorf("merged %v, want %v", describe(got), want)
	}
	shirtKeys := skuKeys(nil, "stock", "shirt")
	records := func(orders ...string) []string {
		keys := slices.Clone(shirtKeys)
		for _, o := range orders {
			keys = append(keys, callKey("stock", "shirt", o))
		}
		return keys
	}
	if s, r := got[0], got[1]; s.s != settleEachScript || r.s != reserveEachScript ||
		!slices.Equal(r.keys, records("a", "c", "a")) || !slices.Equal(s.keys, records("c", "d")) {
		t.Errorf("merged runs of %v and %v on %v and %v, want settle_each.lua and reserve_each.lua on shirt's keys and the calls' records", s.s.hash, r.s.hash, s.keys, r.keys)
	}
	if want := []any{"86400000", "60000", "1", "c", "sold", "d", "cancelled"}; !slices.Equal(got[0].args, want) {
		t.Errorf("settle_each args %v, want %v", got[0].args, want)
	}
	if want := []any{"86400000", "60000", "1", "a", "60000", "1", "c", "60000", "1", "a", "60000", "1"}; !slices.Equal(got[1].args, want) {
		t.Errorf("reserve_each args %v, want %v", got[1].args, want)
	}

	var many []*scriptRun
	for i := range 2*maxEach + 1 {
		many = append(many, shirt(fmt.Sprint(i)))
	}
	got = mergeRuns(many)
	if len(got) != 3 || len(got[0].parts) != maxEach || len(got[1].parts) != maxEach || got[2].parts != nil {
		t.Errorf("%d Reserves of one sku: %d runs, want two of %d and one alone", len(many), len(got), maxEach)
	}
}

// split gives each part its own reply, or the merged run's error to every
// part, also for a reply of the wrong length.
func TestSplit(t *testing.T) {
	ctx := context.Background()
	run := func(val any, err error) *scriptRun {
		m := &scriptRun{parts: []*scriptRun{{}, {}}, cmd: redis.NewCmd(ctx)}
		if err != nil {
			m.cmd.SetErr(err)
		} else {
			m.cmd.SetVal(val)
		}
		m.split(ctx)
		return m
	}
	m := run([]any{[]any{int64(0), int64(0), int64(1)}, []any{int64(4), int64(0), int64(0)}}, nil)
	for i, want := range []int64{0, 4} {
		v, err := m.parts[i].cmd.Slice()
		if err != nil || len(v) != 3 || v[0] != want {
			t.Errorf("part %d: %v, %v; want code %d", i, v, err, want)
		}
	}
	broken := errors.New("connection cut")
	for _, m := range []*scriptRun{run(nil, broken), run([]any{[]any{int64(0), int64(0)}}, nil)} {
		for i, p := range m.parts {
			if _, err := p.cmd.Slice(); err == nil {
				t.Errorf("part %d: no error, want the merged run's", i)
			}
		}
	}
	if err := run(nil, broken).parts[1].cmd.Err(); !errors.Is(err, broken) {
		t.Errorf("part's error %v, want %v", err, broken)
	}
}
