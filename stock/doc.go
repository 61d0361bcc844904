// Package stock counts units of stock in Redis so that they cannot be
// oversold: an order reserves units, then commits the sale or cancels it,
// and a reservation that is neither returns its units when its hold
// expires.
//
//	inv, err := stock.New(rdb) // any go-redis client; one per process
//	if err != nil {
//		return err // a nil rdb or an invalid option
//	}
//	if err := inv.Set(ctx, "console", 1000); err != nil {
//		return err
//	}
//
//	err = inv.Reserve(ctx, "console", orderID, 1, 10*time.Minute)
//	if errors.Is(err, stock.ErrSoldOut) {
//		return err // nothing left to reserve: tell the buyer
//	}
//	// take the payment, then
//	err = inv.Commit(ctx, "console", orderID) // or inv.Cancel
//
// Each call is one Lua script, one round trip in the usual case: no lock,
// no WATCH retries, no compensation. [Inventory.ReserveAll] reserves a cart
// of several skus, all or nothing.
//
// Calls of one Inventory that come together go out together: a Reserve,
// Commit or Cancel made while a batch of the Inventory is in flight waits
// for it to come back, then goes out as one pipeline with every call that
// queued meanwhile, in the order they came, each with its own reply or
// error. In a batch, the Reserves of one sku go as one script, where the
// first of them came, and its Commits and Cancels as another, where the
// first of those came; each makes its calls one after the other as they
// came, with one look at the sku and one write of it. So a Cancel may run
// before a Reserve of the sku that came before it in the batch: the calls
// of a batch were all in flight at once, and any order is one they could
// have run in. A call on a quiet Inventory is sent at once, with no timer,
// so batching adds no wait to a lone caller, and under load it saves round
// trips and most of Redis's work per call; that is one reason to share one
// Inventory per process.
//
// # Guarantees
//
//   - No oversell: a reservation takes its units only if that many are
//     available, in one atomic step; the units available never go below
//     zero, whatever the number of processes and clients.
//   - One effect per call, however many times go-redis sends it: see
//     "Calls sent twice" below.
//   - One reservation per order and sku: the order names it, so a Reserve
//     retried by the caller (after a timeout, or [ErrOutcomeUnknown])
//     changes nothing and returns nil, and a retried Commit or Cancel gets
//     the answer the first one got. Outcomes are remembered for
//     [WithRetention] (default a day).
//   - Holds expire with no sweeper process: every call on a sku first
//     returns the units of its expired holds to the stock, so [Inventory.Available]
//     and [Inventory.Levels] are right at any time, and a Commit after the
//     hold's deadline fails with [ErrNoReservation] even if nothing has
//     returned the units yet. Deadlines are taken from the Redis server's
//     clock (TIME), never the client's.
//   - A script returns at most 100 expired holds of a sku at a time, so
//     that no call keeps Redis busy for long; a call that finds more runs
//     again until none is left (each expired hold is returned once).
//   - A failed call changes nothing: bad input never reaches Redis, and
//     the scripts check every key before they write one, and a key of
//     another type stops them there. (A sku's level keeps the earliest
//     deadline of its holds, so that a call before it does not look for
//     expired holds; it then checks the holds by its first write.)
//   - Every call returns when its context ends, even if Redis does not
//     answer; a call that changes the stock then returns
//     [ErrOutcomeUnknown], as it may still take effect (once).
//     [Inventory.Close] waits for such calls.
//
// # Calls sent twice
//
// go-redis sends a command again when its reply has not come within the
// client's ReadTimeout (default 5 s), or its connection broke: on another
// connection, up to MaxRetries times (default 3), and every copy that
// reached Redis runs when Redis gets to it. So every call that changes the
// stock (Set, Add, Delete, Reserve, Commit, Cancel and the *All calls,
// alone or batched) carries an id of its own, and its script, when it
// changes something, records its reply under the id in the sku's slot
// ("stock{shirt}:call:<id>"); a later copy finds the record, answers as the
// first copy did, and changes nothing. A copy of a Set that comes after a
// shopper's Reserve does not put the reserved units back on sale, and a
// copy of a Cancel does not cancel the order's next reservation. A call
// that changed nothing records nothing: a later copy may do it, once.
//
// A record lasts as long as go-redis may go on sending copies, by the
// client's options: MaxRetries+1 sends (times MaxRedirects+1 on a Cluster),
// each after at most a DialTimeout, a PoolTimeout, a WriteTimeout, a
// ReadTimeout and a MaxRetryBackoff; about a minute with the defaults, four
// on a Cluster. A copy that reaches Redis later still than that (a client
// stalled past its timeouts, then a Redis paused for longer than the
// window) would run again. A record takes about 120 bytes, far less than
// the outcomes of orders kept for the retention.
//
// A call that gets no answer returns [ErrOutcomeUnknown], wrapping the
// cause: it was sent, and may have taken effect, or may still; never
// twice. Every other error means that nothing changed, and nil that the
// call took effect once.
//
// # Keys and Redis Cluster
//
// A sku has three keys, which hash to one Cluster slot: "stock{shirt}:level"
// (a hash of the units available, held and sold), "stock{shirt}:order"
// (each order's state) and "stock{shirt}:holds" (a sorted set of
// deadlines). The prefix ([WithPrefix], default "stock") is followed by
// the hash tag in braces, then the suffix: the tag is the sku itself when
// it has neither a hash tag nor a '}'. A sku with a hash tag keeps its tag, and the
// whole sku follows the suffix after '=': "{shop-7}shirt" has
// "stock{shop-7}:level={shop-7}shirt" and so on, and every sku tagged
// "{shop-7}" shares a slot, which a cart needs on a Cluster:
// [Inventory.ReserveAll] returns [ErrCrossSlot] for a cart of several slots
// before it sends anything. A sku with a '}' but no tag gets a tag made
// from its checksum: "a}b" has "stock{#40634}:level=a}b". A prefix may not
// contain a brace, so a name reads back one way only: no two inventories,
// whatever their prefixes, and no two skus share a key.
//
// # Metrics
//
// An Inventory given an observer with WithObserver tells it how each
// Reserve, Commit and Cancel (and their All forms) that reached Redis
// ended: ok, sold out, conflict, no reservation, unknown sku, unknown (no
// answer came) or an error. Give it the Observer given to the dlock
// Clients (the Prometheus module's Collector, the OpenTelemetry module's
// Observer), so that one registration counts the locks and the stock;
// the skus are no label. Without one nothing is built.
//
// # Failure modes
//
//   - A Redis that loses data loses stock. Without persistence, a restart
//     comes back empty and the calls return [ErrUnknownSKU]; with
//     asynchronous replication, a failover can lose the last reservations
//     and sales. Run the stock's Redis with appendonly and replicas that
//     acknowledge (WAIT), and check it with dlock's CheckDeployment, which
//     warns of a deployment without persistence.
//   - A sku's keys have no expiry, so only an allkeys-* eviction policy
//     can evict them under memory pressure; the sku is then unknown, or its
//     orders forgotten. The records of calls expire, so a volatile-* policy
//     may evict one early, and a late copy of that call would run again.
//     Use noeviction.
//   - A call whose context ended before Redis answered, or whose
//     connection broke, returns [ErrOutcomeUnknown], yet may have taken
//     effect: retry it with the same order, or let the hold expire; check
//     a Set or Add with [Inventory.Levels]. go-redis fails every call of a
//     batch whose connection broke, those answered already too, or sends
//     the whole batch again, which takes effect once (see above).
//   - A hold is measured on the Redis server's clock: a clock that steps
//     forward ends holds early, and one that steps back makes them last
//     longer.
//   - Quantities are whole units from 1 to [MaxQuantity] (2^53-1, what Lua
//     counts exactly); holds and retention are whole milliseconds.
//
// # Tests
//
// The package's fault tests pause a redis-server (SIGSTOP) for 7 s while
// calls are in flight, with go-redis's default options. The slowest of
// them, which pauses Redis until go-redis gives up (about 20 s), runs only
// with DLOCK_SLOW_FAULTS=1 in the environment.
package stock
