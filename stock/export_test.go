package stock

// QueuedCalls returns how many calls of inv wait for a batch to go out.
func QueuedCalls(inv *Inventory) int { return inv.batch.Queued() }

// BatchLanes is how many batches of an Inventory are in flight at once.
const BatchLanes = batchLanes
