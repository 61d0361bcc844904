package demo

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/dlock-go/dlock/stock"
)

// The flash sale: more buyers than items, served by several instances.
// Where a lock guards the stock, each buyer in turn reads it and writes it
// back one less; package stock does without the lock: a buyer reserves an
// item in one atomic script, pays, and commits the sale. One buyer in ten
// abandons the cart without a word; its hold expires and the item goes back
// on sale, with no sweeper. The buyers turned away while abandoned items
// were held try once more after the holds expired, and buy them.
const (
	saleStock        = 1000
	saleInstances    = 12
	saleBuyers       = 100              // per instance, one after the other
	saleAbandonEvery = 10               // one buyer in ten abandons the cart
	saleHold         = time.Second      // far longer than a buyer takes from reserving to paying, even on a busy machine
	saleWait         = 30 * time.Second // the longest the case waits for the holds to expire
)

// saleSKU is the item on sale.
const saleSKU = "item-42"

// saleTally counts what the buyers of one instance got.
type saleTally struct {
	sold, abandoned int
	turnedAway      []string // the orders of buyers told it was sold out
	err             error
}

func flashSale(ctx context.Context, d *env) result {
	prefix := d.key("sale")
	inv, err := stock.New(d.rdb, stock.WithPrefix(prefix))
	if err != nil {
		return failed(err)
	}
	defer func() { _ = inv.Close() }()
	base := prefix + "{" + saleSKU + "}" // the keys of a sku with no braces (package stock's doc)
	defer d.cleanup(ctx, base+":level", base+":order", base+":holds")
	if err := inv.Set(ctx, saleSKU, saleStock); err != nil {
		return failed(err)
	}

	start := time.Now()
	first := saleRound(saleInstances, func(i int) saleTally { return d.saleInstance(ctx, inv, i) })
	if first.err != nil {
		return failed(first.err)
	}
	back, err := waitHoldsExpired(ctx, inv)
	if err != nil {
		return failed(err)
	}
	retry := saleRound(1, func(int) saleTally { return d.saleRetry(ctx, inv, first.turnedAway) })
	if retry.err != nil {
		return failed(retry.err)
	}
	elapsed := time.Since(start)
	levels, err := inv.Levels(ctx, saleSKU)
	if err != nil {
		return failed(err)
	}
	return saleVerdict(first, back, retry, levels, elapsed)
}

// saleRound runs n instances at once and adds up what they did.
func saleRound(n int, instance func(i int) saleTally) saleTally {
	tallies := make([]saleTally, n)
	var total saleTally
	total.err = together(n, func(i int) error {
		tallies[i] = instance(i)
		return tallies[i].err
	})
	for _, t := range tallies {
		total.sold += t.sold
		total.abandoned += t.abandoned
		total.turnedAway = append(total.turnedAway, t.turnedAway...)
	}
	return total
}

func saleVerdict(first saleTally, back int64, retry saleTally, levels stock.Levels, elapsed time.Duration) result {
	buyers := saleInstances * saleBuyers
	sold := first.sold + retry.sold
	happened := fmt.Sprintf("%d buyers, %d instances, reserve then pay:\n"+
		"%d sold, %d turned away, %d carts abandoned,\n"+
		"each back on sale when its %v hold expired;\n"+
		"after the last one, %d back: %d turned away bought them,\n"+
		"%d sold in %v",
		buyers, saleInstances, first.sold, len(first.turnedAway), first.abandoned,
		saleHold, back, retry.sold, sold, elapsed.Round(time.Millisecond))
	var problems []string
	if sold > saleStock {
		problems = append(problems, fmt.Sprintf("%d sold of %d", sold, saleStock))
	}
	if levels != (stock.Levels{Sold: saleStock}) || int64(sold) != levels.Sold {
		problems = append(problems, fmt.Sprintf("%d sold, Redis counts %+v, want all %d sold", sold, levels, saleStock))
	}
	if back != int64(saleStock-first.sold) {
		problems = append(problems, fmt.Sprintf("%d back in stock after %d of %d sold", back, first.sold, saleStock))
	}
	return verdict(happened, "no oversell, abandoned items resold", problems)
}

// saleInstance serves its buyers one after the other, and stops at the
// first error.
func (d *env) saleInstance(ctx context.Context, inv *stock.Inventory, instance int) (t saleTally) {
	for b := range saleBuyers {
		order := d.key("order:%d-%d", instance, b)
		err := inv.Reserve(ctx, saleSKU, order, 1, saleHold)
		switch {
		case errors.Is(err, stock.ErrSoldOut):
			t.turnedAway = append(t.turnedAway, order)
			continue
		case err != nil:
			t.err = err
			return t
		case b%saleAbandonEvery == saleAbandonEvery-1:
			t.abandoned++ // gone without a word: the hold will expire
			continue
		}
		if t.err = inv.Commit(ctx, saleSKU, order); t.err != nil { // paid
			return t
		}
		t.sold++
	}
	return t
}

// saleRetry has the buyers turned away try once more, and pay.
func (d *env) saleRetry(ctx context.Context, inv *stock.Inventory, orders []string) (t saleTally) {
	for _, order := range orders {
		err := inv.Reserve(ctx, saleSKU, order, 1, saleHold)
		if errors.Is(err, stock.ErrSoldOut) {
			continue
		}
		if err == nil {
			err = inv.Commit(ctx, saleSKU, order)
		}
		if err != nil {
			t.err = err
			return t
		}
		t.sold++
	}
	return t
}

// waitHoldsExpired waits until no hold is left, and returns the units
// available then.
func waitHoldsExpired(ctx context.Context, inv *stock.Inventory) (int64, error) {
	ctx, cancel := context.WithTimeout(ctx, saleWait)
	defer cancel()
	for {
		levels, err := inv.Levels(ctx, saleSKU)
		if err != nil || levels.Held == 0 {
			return levels.Available, err
		}
		if err := sleep(ctx, saleHold/10); err != nil {
			return 0, fmt.Errorf("%d items still held after %v: %w", levels.Held, saleWait, err)
		}
	}
}
