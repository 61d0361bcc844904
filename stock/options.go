package stock

import (
	"fmt"
	"strings"
	"time"

	"github.com/dlock-go/dlock/observe"
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

// Option configures an Inventory. Pass options to New.
type Option func(*config)

type config struct {
	prefix    string
	retention time.Duration
	obs       observe.PackageObserver
	err       error
}

func newConfig(opts []Option) (config, error) {
	c := config{prefix: DefaultPrefix, retention: DefaultRetention}
	for _, opt := range opts {
		if opt == nil {
			return c, fmt.Errorf("%w: nil Option", ErrInvalidOption)
		}
		if opt(&c); c.err != nil {
			return c, c.err
		}
	}
	return c, nil
}

// WithPrefix sets what the name of every key of the stock starts with, so
// that several inventories share one Redis apart: inventories of different
// prefixes never share a key (see "Keys and Redis Cluster" in the package
// doc). It must not contain '{' or '}': the first '{' of a key ends its
// prefix, and starts the hash tag that places it on a Cluster. New returns
// ErrInvalidOption for a prefix with a brace. The default is DefaultPrefix.
func WithPrefix(prefix string) Option {
	return func(c *config) {
		if strings.ContainsAny(prefix, "{}") {
			c.err = fmt.Errorf("%w: WithPrefix(%q): the prefix contains a brace", ErrInvalidOption, prefix)
			return
		}
		c.prefix = prefix
	}
}

// WithRetention sets how long the outcome of an order on a sku (committed,
// cancelled, expired) is remembered after it happened, so that a retried
// Commit or Cancel gets the answer the first one got. Past it, the order is
// forgotten: a Commit or Cancel then gets ErrNoReservation, and a Reserve
// holds units anew. Each remembered order takes about a hundred bytes of
// Redis memory per sku. The default is DefaultRetention; d must be between
// a millisecond and MaxDuration.
func WithRetention(d time.Duration) Option {
	return func(c *config) {
		if d < time.Millisecond || d > MaxDuration {
			c.err = fmt.Errorf("%w: WithRetention(%v): want 1ms to %v", ErrInvalidOption, d, MaxDuration)
			return
		}
		c.retention = d
	}
}

// WithObserver makes the Inventory tell o how each Reserve, Commit and
// Cancel (and their All forms) that reached Redis ended: observe.OpReserve,
// OpCommit, OpCancel with their outcomes (ok, sold out, conflict, ...).
// Give it the Observer given to the dlock Client with dlock.WithObserver
// (the Prometheus module's Collector, the OpenTelemetry module's
// Observer), so that one registration counts the locks and the stock. A
// nil o is refused with ErrInvalidOption. The default is no observer,
// which costs nothing.
func WithObserver(o observe.PackageObserver) Option {
	return func(c *config) {
		if o == nil {
			c.err = fmt.Errorf("%w: WithObserver(nil)", ErrInvalidOption)
			return
		}
		c.obs = o
	}
}
