package stock

import (
	"context"
	"fmt"
	"strconv"

	"github.com/redis/go-redis/v9"

	"github.com/dlock-go/dlock/internal/batch"
	"github.com/dlock-go/dlock/internal/owner"
	"github.com/dlock-go/dlock/internal/redisclient"
	"github.com/dlock-go/dlock/observe"
)

// Inventory counts the units of any number of skus in Redis, and the
// reservations orders hold on them. It is safe for concurrent use; make one
// per process and share it.
type Inventory struct {
	rdb     redis.UniversalClient
	prefix  string
	header1 []any // the first ARGV of every script on one sku (call.go)
	ids     *callIDs
	batch   *batch.Batcher[*scriptRun]
	calls   *owner.Group            // calls still running after their caller gave up
	obs     observe.PackageObserver // WithObserver; nil without one
}

// Levels is what Inventory.Levels reports of a sku.
type Levels struct {
	Available int64 // units free to reserve
	Held      int64 // units held by reservations neither committed, cancelled nor expired
	Sold      int64 // units of committed reservations, since the sku was first set
}

// New returns an Inventory on rdb, a go-redis client of any kind: a
// *redis.Client, a Sentinel failover client, or a *redis.ClusterClient (see
// ReserveAll for carts on a Cluster). New does not talk to Redis. It
// returns ErrNilClient for a nil rdb, and ErrInvalidOption for an invalid
// option.
//
// The Inventory reads rdb's retry options (MaxRetries, its timeouts) to
// know how long go-redis may go on sending a call again: see "Calls sent
// twice" in the package doc.
func New(rdb redis.UniversalClient, opts ...Option) (*Inventory, error) {
	if redisclient.IsNil(rdb) {
		return nil, ErrNilClient
	}
	o, err := newConfig(opts)
	if err != nil {
		return nil, err
	}
	inv := &Inventory{
		rdb:    rdb,
		prefix: o.prefix,
		header1: []any{
			strconv.FormatInt(o.retention.Milliseconds(), 10),
			strconv.FormatInt(resendWindow(rdb).Milliseconds(), 10),
			"1",
		},
		ids:   newCallIDs(),
		calls: owner.New(),
		obs:   o.obs,
	}
	inv.batch = batch.New(batchLanes, nil, inv.sendBatch)
	return inv, nil
}

// Close waits for the calls whose callers gave up on them when their context
// ended (they end within the Redis client's read timeout), then makes every
// later call return ErrClosed. It does not close the Redis client.
func (inv *Inventory) Close() error {
	inv.calls.Close()
	inv.calls.Wait()
	return nil
}

// Set sets the number of units of sku available to reserve to qty, from 0
// to MaxQuantity, and makes sku known. Reservations already held keep their
// units, and return them on top of qty if they are cancelled or expire;
// qty and the units held may not pass MaxQuantity together
// (ErrInvalidQuantity).
func (inv *Inventory) Set(ctx context.Context, sku string, qty int64) error {
	if err := checkSKU(sku); err != nil {
		return err
	}
	if qty < 0 || qty > MaxQuantity {
		return fmt.Errorf("%w: set %q to %d, want 0 to %d", ErrInvalidQuantity, sku, qty, int64(MaxQuantity))
	}
	c := inv.newCall("set", "", []string{sku}, true, strconv.FormatInt(qty, 10), strconv.FormatInt(MaxQuantity, 10))
	_, err := c.run(ctx, setScript)
	return err
}

// Add adds delta units to those of sku available to reserve, or takes
// -delta away. It returns ErrUnknownSKU for a sku never set, ErrSoldOut
// when fewer than -delta are available, and ErrInvalidQuantity when the
// units available and held would pass MaxQuantity; then nothing changes.
func (inv *Inventory) Add(ctx context.Context, sku string, delta int64) error {
	if err := checkSKU(sku); err != nil {
		return err
	}
	if delta < -MaxQuantity || delta > MaxQuantity {
		return fmt.Errorf("%w: add %d to %q, want -%d to %d", ErrInvalidQuantity, delta, sku, int64(MaxQuantity), int64(MaxQuantity))
	}
	c := inv.newCall("add to", "", []string{sku}, true, strconv.FormatInt(delta, 10), strconv.FormatInt(MaxQuantity, 10))
	c.qty = []int64{-delta}
	_, err := c.run(ctx, addScript)
	return err
}

// Available returns the number of units of sku free to reserve now, expired
// holds included. It returns ErrUnknownSKU for a sku never set.
func (inv *Inventory) Available(ctx context.Context, sku string) (int64, error) {
	l, err := inv.Levels(ctx, sku)
	return l.Available, err
}

// Levels returns the units of sku available, held and sold, once expired
// holds are back in stock. It returns ErrUnknownSKU for a sku never set.
func (inv *Inventory) Levels(ctx context.Context, sku string) (Levels, error) {
	if err := checkSKU(sku); err != nil {
		return Levels{}, err
	}
	c := inv.newCall("read", "", []string{sku}, false)
	r, err := c.run(ctx, levelsScript)
	if err != nil {
		return Levels{}, err
	}
	if len(r.values) != 3 {
		return Levels{}, fmt.Errorf("stock: read %q: unexpected reply %v", sku, r.values)
	}
	return Levels{Available: r.values[0], Held: r.values[1], Sold: r.values[2]}, nil
}

// Delete forgets sku: its units, its holds and its orders' outcomes, as
// when a product is withdrawn or a sale is over. Later calls on sku get
// ErrUnknownSKU until it is Set again; a Commit of a hold it had, too.
func (inv *Inventory) Delete(ctx context.Context, sku string) error {
	if err := checkSKU(sku); err != nil {
		return err
	}
	_, err := inv.newCall("delete", "", []string{sku}, true).run(ctx, deleteScript)
	return err
}

func checkSKU(sku string) error {
	if sku == "" {
		return fmt.Errorf("%w: empty", ErrInvalidSKU)
	}
	return nil
}
