package stock

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/dlock-go/dlock/internal/slot"
	"github.com/dlock-go/dlock/observe"
)

// Reserve holds qty units of sku for order, for hold: they are no longer
// available to others, until Commit sells them, Cancel returns them, or the
// hold passes and they return by themselves. It takes one round trip and is
// atomic: it holds all qty units or none.
//
// It returns ErrSoldOut when fewer than qty units are available, and
// ErrUnknownSKU for a sku never set; then nothing changes. The order names
// the reservation: reserving the same sku for the same order again, as a
// retry after a lost reply does, changes nothing and returns nil (the hold
// is not extended), or ErrConflict if it asks for another quantity. An order
// whose hold was cancelled or expired may reserve the sku again.
//
// qty is from 1 to MaxQuantity; hold counts whole milliseconds of the Redis
// server's clock, from 1ms to MaxDuration.
func (inv *Inventory) Reserve(ctx context.Context, sku, order string, qty int64, hold time.Duration) error {
	return inv.reserve(ctx, order, []string{sku}, []int64{qty}, hold)
}

// ReserveAll holds the units of every sku of items (sku to quantity) for
// order, as Reserve does, all or nothing: one sku sold out and none is held.
// A sku the order holds already with the same quantity is left as it is.
// The holds of one call expire together.
//
// One script reaches all the skus, so on a Redis Cluster they must hash to
// one slot: give them one hash tag, as in "{shop-7}shirt" and
// "{shop-7}socks" (only the part in braces is hashed). ReserveAll returns
// ErrCrossSlot for skus of different slots on a *redis.ClusterClient, and
// for skus of different hash tags on a *redis.Ring, before it sends
// anything. On one server (or Sentinel) any skus go together.
func (inv *Inventory) ReserveAll(ctx context.Context, order string, items map[string]int64, hold time.Duration) error {
	skus := slices.Sorted(maps.Keys(items)) // the same KEYS, and errors, for the same items
	qty := make([]int64, len(skus))
	for i, sku := range skus {
		qty[i] = items[sku]
	}
	return inv.reserve(ctx, order, skus, qty, hold)
}

func (inv *Inventory) reserve(ctx context.Context, order string, skus []string, qty []int64, hold time.Duration) error {
	if err := checkOrder(order); err != nil {
		return err
	}
	if hold < time.Millisecond || hold > MaxDuration {
		return fmt.Errorf("%w: %v, want 1ms to %v", ErrInvalidHold, hold, MaxDuration)
	}
	if err := inv.checkSKUs(skus); err != nil {
		return err
	}
	args := make([]any, 0, 2+len(skus))
	args = append(args, order, strconv.FormatInt(hold.Milliseconds(), 10))
	for i, n := range qty {
		if n < 1 || n > MaxQuantity {
			return fmt.Errorf("%w: reserve %d of %q, want 1 to %d", ErrInvalidQuantity, n, skus[i], int64(MaxQuantity))
		}
		args = append(args, strconv.FormatInt(n, 10))
	}
	c := inv.newCall("reserve", order, skus, true, args...)
	c.qty, c.batched = qty, true
	_, err := c.run(ctx, reserveScript)
	if inv.obs != nil {
		inv.observe(observe.OpReserve, skus[0], err)
	}
	return err
}

// Commit makes the units order holds of sku sold: they never return to the
// stock. It returns ErrNoReservation when the order holds none (the message
// says why: never reserved, cancelled, expired), and nil for an order
// committed already, as a retry after a lost reply finds it.
func (inv *Inventory) Commit(ctx context.Context, sku, order string) error {
	return inv.settle(ctx, "commit", "sold", order, []string{sku})
}

// CommitAll commits the holds of order on every sku of skus, all or
// nothing, as Commit does for one: if one of them is not held (nor
// committed already), it returns ErrNoReservation and nothing changes.
// The skus must share a slot on a Cluster, as in ReserveAll.
func (inv *Inventory) CommitAll(ctx context.Context, order string, skus []string) error {
	return inv.settle(ctx, "commit", "sold", order, skus)
}

// Cancel returns the units order holds of sku to the stock. It returns
// ErrNoReservation when the order holds none (the message says why: never
// reserved, committed, expired, in which case the units are back already),
// and nil for an order cancelled already, as a retry after a lost reply
// finds it.
func (inv *Inventory) Cancel(ctx context.Context, sku, order string) error {
	return inv.settle(ctx, "cancel", "cancelled", order, []string{sku})
}

// CancelAll cancels the holds of order on every sku of skus, all or
// nothing, as Cancel does for one. The skus must share a slot on a
// Cluster, as in ReserveAll.
func (inv *Inventory) CancelAll(ctx context.Context, order string, skus []string) error {
	return inv.settle(ctx, "cancel", "cancelled", order, skus)
}

func (inv *Inventory) settle(ctx context.Context, op, outcome, order string, skus []string) error {
	if err := checkOrder(order); err != nil {
		return err
	}
	if err := inv.checkSKUs(skus); err != nil {
		return err
	}
	c := inv.newCall(op, order, skus, true, order, outcome)
	c.batched = true
	_, err := c.run(ctx, settleScript)
	if inv.obs != nil {
		inv.observe(op, skus[0], err) // op is observe.OpCommit or OpCancel
	}
	return err
}

// observe tells the Inventory's observer, which must not be nil, how a
// call of op on sku (the first of several) ended with err.
func (inv *Inventory) observe(op, sku string, err error) {
	outcome := observe.OutcomeError
	switch {
	case err == nil:
		outcome = observe.OutcomeOK
	case errors.Is(err, ErrSoldOut):
		outcome = observe.OutcomeSoldOut
	case errors.Is(err, ErrConflict):
		outcome = observe.OutcomeConflict
	case errors.Is(err, ErrNoReservation):
		outcome = observe.OutcomeNoReservation
	case errors.Is(err, ErrUnknownSKU):
		outcome = observe.OutcomeUnknownSKU
	case errors.Is(err, ErrOutcomeUnknown):
		outcome = observe.OutcomeUnknown
	}
	inv.obs.ObservePackage(observe.PackageEvent{Package: observe.PackageStock, Op: op, Outcome: outcome, Key: sku})
}

func checkOrder(order string) error {
	if order == "" {
		return fmt.Errorf("%w: empty", ErrInvalidOrder)
	}
	return nil
}

// checkSKUs checks the skus of one call: at least one, none empty, none
// twice, and all reachable by one script.
func (inv *Inventory) checkSKUs(skus []string) error {
	if len(skus) == 0 {
		return fmt.Errorf("%w: no sku given", ErrInvalidSKU)
	}
	seen := make(map[string]bool, len(skus))
	for _, sku := range skus {
		if err := checkSKU(sku); err != nil {
			return err
		}
		if seen[sku] {
			return fmt.Errorf("%w: %q given twice", ErrInvalidSKU, sku)
		}
		seen[sku] = true
	}
	return inv.checkSlots(skus)
}

// checkSlots refuses skus that one script cannot reach: on a Cluster, keys
// of different slots; on a Ring, keys of different hash tags (a Ring places
// a key by its tag, and two tags may be on two shards).
func (inv *Inventory) checkSlots(skus []string) error {
	if len(skus) < 2 {
		return nil
	}
	switch inv.rdb.(type) {
	case *redis.ClusterClient:
		first := slot.Of(skuKey(inv.prefix, skus[0], levelSuffix))
		for _, sku := range skus[1:] {
			if slot := slot.Of(skuKey(inv.prefix, sku, levelSuffix)); slot != first {
				return fmt.Errorf("%w: %q is in slot %d, %q in slot %d; give them one hash tag, as in \"{shop-7}shirt\"",
					ErrCrossSlot, skus[0], first, sku, slot)
			}
		}
	case *redis.Ring:
		first := hashTag(skuKey(inv.prefix, skus[0], levelSuffix))
		for _, sku := range skus[1:] {
			if tag := hashTag(skuKey(inv.prefix, sku, levelSuffix)); tag != first {
				return fmt.Errorf("%w: %q has hash tag %q, %q has %q; a Ring may place them apart",
					ErrCrossSlot, skus[0], first, sku, tag)
			}
		}
	}
	return nil
}
