package stock

import (
	"fmt"
)

// The codes a script replies with first (see lua/prelude.lua).
type code int64

const (
	codeDone          code = iota // done as asked
	codeUnchanged                 // already so: a retried call
	codeAgain                     // more expired holds than one call returns
	codeUnknownSKU                // {code, item}
	codeSoldOut                   // {code, item, available}
	codeNoReservation             // {code, item, state}
	codeConflict                  // {code, item, qty held}
	codeWrongType                 // {code, item, index in KEYS from 1}
	codeTooMany                   // {code, item, available}: past MaxQuantity
)

// The states of an order on a sku, as codeNoReservation reports them.
const (
	stateNone = iota // never reserved, or forgotten
	stateHeld
	stateSold
	stateCancelled
	stateExpired
)

var stateWhy = [...]string{
	stateNone:      "was never reserved (or was forgotten after the retention)",
	stateHeld:      "is held",
	stateSold:      "was committed",
	stateCancelled: "was cancelled",
	stateExpired:   "expired: its units are back in stock",
}

// reply is a script's answer: a code, the index of the sku it is about,
// and the values that follow.
type reply struct {
	code   code
	item   int
	values []int64
}

func parseReply(v []any) (reply, error) {
	ints := make([]int64, len(v))
	for i, x := range v {
		n, ok := x.(int64)
		if !ok {
			return reply{}, fmt.Errorf("stock: unexpected reply %v", v)
		}
		ints[i] = n
	}
	if len(ints) < 2 || ints[1] < 0 {
		return reply{}, fmt.Errorf("stock: unexpected reply %v", v)
	}
	return reply{code: code(ints[0]), item: int(ints[1]), values: ints[2:]}, nil
}

// value returns the i-th value after the item, or 0.
func (r reply) value(i int) int64 {
	if i < len(r.values) {
		return r.values[i]
	}
	return 0
}

// replyError maps a reply's code to the error the caller gets.
func (c *call) replyError(r reply) error {
	if r.item >= len(c.skus) {
		return fmt.Errorf("stock: %s %s: unexpected reply %d %d %v", c.op, c.about(), r.code, r.item, r.values)
	}
	sku := c.skus[r.item]
	switch r.code {
	case codeDone, codeUnchanged:
		return nil
	case codeUnknownSKU:
		return fmt.Errorf("%w %q: never set, or lost by Redis", ErrUnknownSKU, sku)
	case codeSoldOut:
		if c.order == "" {
			return fmt.Errorf("%w: %q has %d available, cannot take %d away", ErrSoldOut, sku, r.value(0), c.qty[r.item])
		}
		return fmt.Errorf("%w: %q has %d available, order %q wants %d", ErrSoldOut, sku, r.value(0), c.order, c.qty[r.item])
	case codeNoReservation:
		why := "is in an unknown state"
		if s := r.value(0); s >= 0 && s < int64(len(stateWhy)) {
			why = stateWhy[s]
		}
		return fmt.Errorf("%w: order %q on %q %s", ErrNoReservation, c.order, sku, why)
	case codeConflict:
		return fmt.Errorf("%w: order %q holds %d of %q, not %d", ErrConflict, c.order, r.value(0), sku, c.qty[r.item])
	case codeWrongType:
		key := r.value(0) - 1
		if key < 0 || key >= int64(len(c.keys)) {
			return fmt.Errorf("%w: a key of %q", ErrWrongType, sku)
		}
		return fmt.Errorf("%w: %q, a key of %q", ErrWrongType, c.keys[key], sku)
	case codeTooMany:
		return fmt.Errorf("%w: %s %q would leave more than MaxQuantity units available and held", ErrInvalidQuantity, c.op, sku)
	default:
		return fmt.Errorf("stock: %s %s: unexpected reply %d %v", c.op, c.about(), r.code, r.values)
	}
}
