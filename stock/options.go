package stock

import (
	"fmt"
	"strings"
	"time"
)

// Defaults and limits.
const (
	// DefaultPrefix starts the name of every key of the stock: "stock{shirt}:level".
	DefaultPrefix = "stock"
	// DefaultRetention is how long an order's outcome is remembered.
	DefaultRetention = 24 * time.Hour
	// MaxQuantity is the largest quantity a call takes, and the most units
	// a sku may have available and held: 2^53-1, the largest integer that
	// Lua, which counts in float64, counts exactly.
	MaxQuantity = 1<<53 - 1
	// MaxDuration is the longest hold or retention: ten years.
	MaxDuration = 10 * 365 * 24 * time.Hour
)

// An Option configures an Inventory in New.
type Option func(*options) error

type options struct {
	prefix    string
	retention time.Duration
}

// WithPrefix sets what the name of every key of the stock starts with, so
// that several inventories share one Redis apart: inventories of different
// prefixes never share a key (see "Keys and Redis Cluster" in the package
// doc). It must not contain '{' or '}': the first '{' of a key ends its
// prefix, and starts the hash tag that places it on a Cluster. New returns
// ErrInvalidOption for a prefix with a brace. Default DefaultPrefix.
func WithPrefix(prefix string) Option {
	return func(o *options) error {
		if strings.ContainsAny(prefix, "{}") {
			return fmt.Errorf("%w: prefix %q contains a brace", ErrInvalidOption, prefix)
		}
		o.prefix = prefix
		return nil
	}
}

// WithRetention sets how long the outcome of an order on a sku (committed,
// cancelled, expired) is remembered after it happened, so that a retried
// Commit or Cancel gets the answer the first one got. Past it, the order is
// forgotten: a Commit or Cancel then gets ErrNoReservation, and a Reserve
// holds units anew. Between a millisecond and MaxDuration; default
// DefaultRetention. Each remembered order takes about a hundred bytes of
// Redis memory per sku.
func WithRetention(d time.Duration) Option {
	return func(o *options) error {
		if d < time.Millisecond || d > MaxDuration {
			return fmt.Errorf("%w: retention %v, want 1ms to %v", ErrInvalidOption, d, MaxDuration)
		}
		o.retention = d
		return nil
	}
}
