package stock

import (
	"context"
	"fmt"

	"github.com/redis/go-redis/v9"
)

// QueuedCalls returns how many calls of inv wait for a batch to go out.
func QueuedCalls(inv *Inventory) int { return inv.batch.Queued() }

// BatchLanes is how many batches of an Inventory are in flight at once.
const BatchLanes = batchLanes

// EachWidth returns how many ARGV each call takes in the arguments of an
// EVALSHA or EVAL of a *_each.lua script (the calls of one sku in one
// batch), or 0 for another script.
func EachWidth(args []any) int {
	switch fmt.Sprint(args[1]) {
	case reserveEachScript.hash, reserveEachScript.src:
		return 3
	case settleEachScript.hash, settleEachScript.src:
		return 2
	}
	return 0
}

// LoadScripts loads every script of the package into the server of rdb,
// so that no call sends its script again with EVAL.
func LoadScripts(ctx context.Context, rdb redis.UniversalClient) error {
	for _, s := range []script{reserveScript, reserveEachScript, settleScript, settleEachScript, levelsScript, setScript, addScript, deleteScript} {
		if err := rdb.ScriptLoad(ctx, s.src).Err(); err != nil {
			return err
		}
	}
	return nil
}
