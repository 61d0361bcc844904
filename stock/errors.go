package stock

import "errors"

// Errors of the stock itself. Each call's error wraps one of them and says
// which sku and order it is about; test them with errors.Is.
var (
	// ErrSoldOut means that fewer units are available than a reservation
	// (or a negative Add) asks for. Nothing changed.
	ErrSoldOut = errors.New("stock: sold out")

	// ErrNoReservation means that the order holds no units of the sku to
	// commit or cancel: it never reserved them, its hold expired (the units
	// are back in stock), it cancelled them (Commit), it committed them
	// (Cancel), or its outcome was forgotten after the retention
	// (WithRetention). The message says which. Nothing changed.
	ErrNoReservation = errors.New("stock: no reservation")

	// ErrUnknownSKU means that the sku was never given a quantity with
	// Set, or that Redis lost it (a restart without persistence). Nothing
	// changed.
	ErrUnknownSKU = errors.New("stock: unknown sku")

	// ErrConflict means that the order already holds (or bought) another
	// quantity of the sku than the one asked for: a retried Reserve must
	// ask for the same quantity. Nothing changed.
	ErrConflict = errors.New("stock: order holds another quantity")

	// ErrCrossSlot means that the skus of one call hash to different slots
	// of a Redis Cluster, where one script cannot reach them all. Skus that
	// share a hash tag, "{shop-7}shirt" and "{shop-7}socks", share a slot.
	ErrCrossSlot = errors.New("stock: skus in different cluster slots")

	// ErrOutcomeUnknown means that a call that changes the stock was sent
	// but its answer did not come: its context ended first, or go-redis
	// gave up (a timeout after its retries, a broken connection). It may
	// have taken effect, or may still take effect while go-redis's copies
	// of it reach Redis; either way at most once. The error wraps the
	// cause too. Find out with Levels, or retry: a Reserve, Commit or
	// Cancel retried with the same order changes nothing more; a retried
	// Set sets the same level; a retried Add is another Add.
	ErrOutcomeUnknown = errors.New("stock: outcome unknown")

	// ErrWrongType means that a key the stock uses holds a value of another
	// type, written by something else. Nothing changed.
	ErrWrongType = errors.New("stock: key holds another type")
)

// Errors of bad input: the call did not reach Redis.
var (
	// ErrInvalidSKU means an empty sku.
	ErrInvalidSKU = errors.New("stock: invalid sku")
	// ErrInvalidOrder means an empty order.
	ErrInvalidOrder = errors.New("stock: invalid order")
	// ErrInvalidQuantity means a quantity out of range: a reservation of
	// less than one unit, a negative Set, or more than MaxQuantity.
	ErrInvalidQuantity = errors.New("stock: invalid quantity")
	// ErrInvalidHold means a hold shorter than a millisecond or longer
	// than MaxDuration.
	ErrInvalidHold = errors.New("stock: invalid hold")
	// ErrInvalidOption means an option given to New was out of range.
	ErrInvalidOption = errors.New("stock: invalid option")
	// ErrNilClient means that New was given a nil Redis client.
	ErrNilClient = errors.New("stock: nil redis client")
	// ErrClosed means a call on an Inventory after Close.
	ErrClosed = errors.New("stock: inventory closed")
)
