package faults_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/dlock-go/dlock/stock"
)

// A Reserve runs on Redis but its reply is lost, and go-redis resends it
// (MaxRetries) where it can; then the caller retries: the order holds its
// units once.
func TestStockReserveRetriedAfterLostReply(t *testing.T) {
	t.Parallel()
	srv, p := setup(t)
	rdb := p.Client(withReadTimeout, func(o *redis.Options) { o.MaxRetries = 2 })
	inv, err := stock.New(rdb)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { inv.Close() })
	direct, err := stock.New(srv.Client()) // around the proxy
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { direct.Close() })
	ctx := context.Background()
	if err := direct.Set(ctx, "shirt", 10); err != nil {
		t.Fatal(err)
	}
	// The script is loaded, and a connection open, before the fault.
	if err := inv.Reserve(ctx, "shirt", "warm-up", 1, time.Minute); err != nil {
		t.Fatal(err)
	}

	remove := p.BlackholeReplies()
	if err := inv.Reserve(ctx, "shirt", "o1", 3, time.Minute); !isTimeout(err) || !errors.Is(err, stock.ErrOutcomeUnknown) {
		t.Errorf("Reserve with its reply lost = %v, want a timeout and ErrOutcomeUnknown", err)
	}
	if l, err := direct.Levels(ctx, "shirt"); err != nil || l != (stock.Levels{Available: 6, Held: 4}) {
		t.Errorf("levels with the reply lost: %+v, %v; want the reservation made once", l, err)
	}
	remove()

	if err := inv.Reserve(ctx, "shirt", "o1", 3, time.Minute); err != nil {
		t.Fatalf("the retried Reserve: %v", err)
	}
	if err := inv.Commit(ctx, "shirt", "o1"); err != nil {
		t.Fatal(err)
	}
	if l, err := direct.Levels(ctx, "shirt"); err != nil || l != (stock.Levels{Available: 6, Held: 1, Sold: 3}) {
		t.Errorf("levels after the retry and the commit: %+v, %v", l, err)
	}
}
