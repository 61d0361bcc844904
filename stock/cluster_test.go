package stock_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/dlock-go/dlock/redistest"
	"github.com/dlock-go/dlock/stock"
)

// On a Redis Cluster: each sku's keys share a slot, a cart of skus with one
// hash tag is reserved and committed as one, and a cart across slots is
// refused before anything is sent.
func TestCluster(t *testing.T) {
	t.Parallel()
	cluster := redistest.NewCluster(t, 3, 0)
	rdb := cluster.Client()
	inv := newInventory(t, rdb)
	ctx := context.Background()
	shirt, socks, hat, odd := "{shop-7}shirt", "{shop-7}socks", "hat", "a}b"
	if redistest.Slot("shop-7") == redistest.Slot(hat) {
		t.Fatal("the test needs the hat in another slot than the shop")
	}
	for _, sku := range []string{shirt, socks, hat, odd} {
		mustSet(t, inv, sku, 5)
	}

	// The keys of one sku, as doc.go names them, in one slot.
	levels := map[string]string{shirt: "stock{shop-7}:level=" + shirt, hat: "stock{hat}:level"}
	for sku, level := range levels {
		var slots []int64
		for _, suffix := range []string{":level", ":order", ":holds"} {
			key := strings.Replace(level, ":level", suffix, 1)
			if n, err := rdb.Exists(ctx, key).Result(); suffix == ":level" && (err != nil || n != 1) {
				t.Errorf("%s: exists %d, %v; want the key of sku %q", key, n, err, sku)
			}
			slot, err := rdb.ClusterKeySlot(ctx, key).Result()
			if err != nil {
				t.Fatal(err)
			}
			slots = append(slots, slot)
		}
		for _, slot := range slots[1:] {
			if slot != slots[0] {
				t.Errorf("the keys of %q are in slots %v", sku, slots)
			}
		}
	}

	cart := map[string]int64{shirt: 1, socks: 2}
	if err := inv.ReserveAll(ctx, "o1", cart, time.Minute); err != nil {
		t.Fatal(err)
	}
	if err := inv.CommitAll(ctx, "o1", []string{shirt, socks}); err != nil {
		t.Fatal(err)
	}
	wantLevels(t, inv, socks, stock.Levels{Available: 3, Sold: 2})

	err := inv.ReserveAll(ctx, "o2", map[string]int64{shirt: 1, hat: 1}, time.Minute)
	if !errors.Is(err, stock.ErrCrossSlot) || !strings.Contains(err.Error(), "hash tag") {
		t.Fatalf("ReserveAll across slots = %v, want ErrCrossSlot", err)
	}
	if err := inv.CancelAll(ctx, "o2", []string{hat, odd}); !errors.Is(err, stock.ErrCrossSlot) {
		t.Fatalf("CancelAll across slots = %v, want ErrCrossSlot", err)
	}
	wantLevels(t, inv, shirt, stock.Levels{Available: 4, Sold: 1})
	wantLevels(t, inv, hat, stock.Levels{Available: 5})

	// One sku at a time, any sku goes.
	for _, sku := range []string{hat, odd} {
		mustReserve(t, inv, sku, "o3", 2, time.Minute)
		if err := inv.Commit(ctx, sku, "o3"); err != nil {
			t.Fatal(err)
		}
		wantLevels(t, inv, sku, stock.Levels{Available: 3, Sold: 2})
	}
}
