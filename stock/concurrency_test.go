package stock_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/dlock-go/dlock/internal/testenv"
	"github.com/dlock-go/dlock/stock"
)

// 200 buyers over four Clients (as four processes would be) reserve,
// commit or cancel until the stock runs out: what they were sold is what
// Redis counts, and never more than the stock.
func TestNoOversell(t *testing.T) {
	t.Parallel()
	const (
		items    = 500
		buyers   = 200
		clients  = 4
		attempts = 10 // per buyer, 1 to 3 units each: far more wanted than there is
	)
	ctx := context.Background()
	sku := testSKU(t, "flash")
	invs := make([]*stock.Inventory, clients)
	for i := range invs {
		invs[i] = newInventory(t, testenv.Client(t))
	}
	mustSet(t, invs[0], sku, items)

	var sold, soldOuts atomic.Int64
	errs := make(chan error, buyers)
	var wg sync.WaitGroup
	for b := range buyers {
		inv := invs[b%clients]
		wg.Go(func() {
			for a := range attempts {
				order := fmt.Sprintf("b%d-%d", b, a)
				qty := int64(1 + (b+a)%3)
				err := inv.Reserve(ctx, sku, order, qty, time.Minute)
				if errors.Is(err, stock.ErrSoldOut) {
					soldOuts.Add(1)
					return
				}
				if err == nil && (b+a)%5 == 0 {
					err = inv.Cancel(ctx, sku, order) // this one abandons its cart
				} else if err == nil {
					if err = inv.Commit(ctx, sku, order); err == nil {
						sold.Add(qty)
					}
				}
				if err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	l := levels(t, invs[0], sku)
	if l.Sold != sold.Load() || l.Sold > items || l.Held != 0 || l.Available < 0 || l.Available+l.Sold != items {
		t.Errorf("levels %+v after the buyers were sold %d of %d", l, sold.Load(), items)
	}
	// Had nobody seen it sold out, each buyer would have bought 8 units or more.
	if soldOuts.Load() == 0 {
		t.Errorf("no buyer saw the stock sold out: %+v", l)
	}
}

// lostReplies makes a client lose the reply of its scripts while armed:
// Redis runs them, the caller gets an error.
type lostReplies struct{ armed atomic.Bool }

var errReplyLost = errors.New("test: reply lost")

func (h *lostReplies) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h *lostReplies) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		err := next(ctx, cmd)
		if h.armed.Load() && (cmd.Name() == "evalsha" || cmd.Name() == "eval") {
			cmd.SetErr(errReplyLost)
			return errReplyLost
		}
		return err
	}
}

func (h *lostReplies) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

// A Reserve whose reply was lost, retried: one reservation, not two. The
// same for Commit and Cancel.
func TestRetryAfterLostReply(t *testing.T) {
	t.Parallel()
	rdb := redis.NewClient(&redis.Options{Addr: redisAddr})
	t.Cleanup(func() { rdb.Close() })
	var lost lostReplies
	rdb.AddHook(&lost)
	inv := newInventory(t, rdb)
	ctx := context.Background()
	sku := testSKU(t, "shirt")
	mustSet(t, inv, sku, 10)

	retried := func(call func() error) {
		t.Helper()
		lost.armed.Store(true)
		if err := call(); !errors.Is(err, errReplyLost) {
			t.Fatalf("with the reply lost: %v", err)
		}
		lost.armed.Store(false)
		if err := call(); err != nil {
			t.Fatalf("the retry: %v", err)
		}
	}
	retried(func() error { return inv.Reserve(ctx, sku, "o1", 3, time.Minute) })
	retried(func() error { return inv.Reserve(ctx, sku, "o2", 3, time.Minute) })
	wantLevels(t, inv, sku, stock.Levels{Available: 4, Held: 6})
	retried(func() error { return inv.Commit(ctx, sku, "o1") })
	retried(func() error { return inv.Cancel(ctx, sku, "o2") })
	wantLevels(t, inv, sku, stock.Levels{Available: 7, Sold: 3})
}

// The same order reserved, then committed, by many goroutines of several
// Inventories at once, as retries racing each other: one hold, one sale.
// (Calls of one Inventory that meet in a batch go as one script, which
// makes them one after the other.)
func TestConcurrentRetriesHoldOnce(t *testing.T) {
	t.Parallel()
	invs := []*stock.Inventory{newInventory(t, testenv.Client(t)), newInventory(t, testenv.Client(t))}
	ctx := context.Background()
	sku := testSKU(t, "shirt")
	mustSet(t, invs[0], sku, 5)
	const callers = 50
	all := func(call func(inv *stock.Inventory) error) {
		t.Helper()
		var wg sync.WaitGroup
		errs := make([]error, callers)
		for i := range callers {
			wg.Go(func() { errs[i] = call(invs[i%len(invs)]) })
		}
		wg.Wait()
		if err := errors.Join(errs...); err != nil {
			t.Fatal(err)
		}
	}
	all(func(inv *stock.Inventory) error { return inv.Reserve(ctx, sku, "o1", 2, time.Minute) })
	wantLevels(t, invs[0], sku, stock.Levels{Available: 3, Held: 2})
	all(func(inv *stock.Inventory) error { return inv.Commit(ctx, sku, "o1") })
	wantLevels(t, invs[0], sku, stock.Levels{Available: 3, Sold: 2})
}
