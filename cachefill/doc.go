// Package cachefill keeps values in Redis and fills a missing one with a
// single load across every process that shares the Redis, so a hot key
// that expires does not send a stampede to the database.
//
//	cache, err := cachefill.New(locker) // the process's dlock.Client; one Cache per process
//	if err != nil {
//		return err // a nil or Redlock Client, or an invalid option
//	}
//	defer cache.Close() // before locker.Close
//
//	v, err := cache.Get(ctx, "user:42", time.Minute, func(ctx context.Context) ([]byte, error) {
//		return db.LoadUser(ctx, 42) // return cachefill.ErrNotFound for a missing row
//	})
//
// [Typed] does the same for values of a Go type, encoded as JSON or by a
// Codec of your own. [Cache.Invalidate] tells the cache that the source
// changed.
//
// # Guarantees
//
//   - A hit is one round trip (one script) and takes no lock.
//   - On a miss, one caller loads: within a process, concurrent Gets of a
//     key share one fetch; across processes, the read that misses first
//     claims the fill, in the same script, where no loader holds the lock;
//     its caller starts the load at once and takes the lock (a dlock lock,
//     renewed while it loads) in the same moment, so the load is not held
//     up by a round trip, and stores under the lock. The others block on
//     the entry's stream of fill messages (one XREAD), to which the loader's
//     store adds the value: they are woken with the value itself, and do
//     not poll. A waiting process runs five Redis commands a fill (its
//     read's four, inside the script, and the XREAD), however long the
//     load takes, plus one XREAD per further Redis timeout
//     (WithRedisTimeout) the load lasts.
//   - A loader stores its value only while it still holds its lock, in one
//     script, so a loader that lost its lock (paused, cut off) never
//     overwrites a newer value.
//   - A load that fails, panics, times out (WithLoadTimeout) or whose lock
//     is lost stores nothing; its error goes to the Gets of its process,
//     and the waiters elsewhere, told so by a fill message, elect the next
//     loader among themselves. A loader whose process dies holds up the
//     others for the lock's ttl at most (WithLockTTL).
//   - ErrNotFound from a load is remembered for a short ttl
//     (WithNotFoundTTL), so missing rows do not reach the source on every
//     request (cache penetration).
//   - Stored ttls lose a random share (WithJitter), so entries filled
//     together do not expire together (cache avalanche).
//   - A hot entry is loaded again in the background before it expires
//     (probabilistic early expiration, XFetch: Vattani, Chierichetti,
//     Lowenstein, VLDB 2015; WithEarlyRefresh), by one caller across
//     processes, while Gets keep getting the cached value: a hot key does
//     not miss.
//   - Invalidate marks an entry instead of deleting it: readers get the
//     entry as it is while one of them loads it anew. A load that read the
//     source before the change stores its value marked, to be loaded again.
//   - Every call returns when its context ends, even if Redis hangs;
//     each call to Redis before waiting is bounded by WithRedisTimeout.
//   - Every call has one effect, whatever go-redis resends: it sends a
//     command whose reply did not come within its ReadTimeout (5 s by
//     default) again, on another connection, MaxRetries times, and every
//     copy runs once Redis answers. A copy of a loader's store finds the
//     entry stored with the loader's token and answers as the first copy
//     did, also after the loader released its lock; a copy of Invalidate
//     finds its call's id in the entry and counts no second mark; a copy of
//     a claim's clearing, or of a loader's word that it stored nothing,
//     leaves the next caller's claim alone and tells nothing more. (With a
//     WithRedisTimeout below go-redis's ReadTimeout, as by default, a call
//     gives up before go-redis sends a copy.)
//
// # Keys and Redis Cluster
//
// The entry of "user:42" is a hash at "cachefill{user:42}:value", its
// loader's lock is "cachefill{user:42}:lock", the claim of its fill
// "cachefill{user:42}:claim", the stream of its fill messages (one kept,
// for a lock's ttl) "cachefill{user:42}:filled", and the token of the last
// loader that gave up (for a lock's ttl) "cachefill{user:42}:gaveup";
// they share a Cluster slot. WithPrefix changes "cachefill".
//
// It needs Redis 7.0 or later (a read claims a fill with SET NX GET).
//
// # The dlock Client
//
// A Cache takes its loaders' locks on the dlock Client given to New: the
// Client's observers (dlock.WithObserver) see them, its holder name names
// them, and the Cache reports to its logger unless WithLogger says
// otherwise. The Cache reads and stores entries through the Client's
// go-redis client. The Client is the caller's: Cache.Close does not close
// it; close it after the Cache.
//
// A Cache runs on one Redis deployment (a server, Sentinel or a Cluster),
// not on a Redlock quorum: the script that stores an entry checks the
// loader's lock in the same call, on the server that keeps the entry, and
// the lock is taken only while the entry is missing, which a lock on a
// quorum of independent servers cannot offer. New refuses a Client made by
// dlock.NewRedlock with an error wrapping ErrInvalidOption.
//
// # Metrics
//
// A Cache tells the observers of its Client (dlock.WithObserver) that are
// observe.PackageObservers what its fetches do (observe.PackageCachefill):
// lookups that hit, found a stale entry or missed, waits for another
// caller's load, loads and early refreshes with their outcome and
// duration, fallbacks, and loaders that gave up. A Get that joins a fetch
// of the same key under way in the process is counted with that fetch.
// The Prometheus and OpenTelemetry modules make metrics of them; the keys
// are no label. Without such an observer nothing is built.
//
// # Failure modes
//
//   - Redis down, paused or failing: Get calls load directly, once per
//     process and key at a time, since the cache is an optimisation; with
//     WithFallback(false) it returns the error instead. The database then
//     gets one load per process, not one per request. The Cache logs a
//     warning when it starts loading directly, and that Redis answers
//     again when it does, through WithLogger's logger: the dlock
//     Client's unless given.
//   - A load function that ignores its context keeps running after Get
//     gave up on it, and Close waits for it.
//   - Concurrent Gets of one key in a process share the first one's ttl
//     and load function.
//   - A waiter that hears nothing looks at the entry again after the lock
//     ttl of its own Cache: Caches that share keys should share
//     WithLockTTL, or a dead loader holds up waiters with a longer one for
//     that long.
//   - A waiting XREAD holds a connection of the client's pool for the
//     Redis timeout at most; a Cache runs four at once, and further waits
//     (more keys waited for at once) queue for their turn.
//   - A Redis that evicts or loses keys loses entries: that costs a load,
//     never a wrong value. An eviction of a loader's lock (a volatile-* or
//     allkeys-* policy) can let a second loader run.
//   - A load starts before its lock is confirmed. Where the lock is then
//     refused, because something changed in the round trip since the read
//     that claimed the fill (a background refresh elsewhere took the lock,
//     Invalidate marked the key, a claim was lost in a failover), the
//     load's context ends, with a cause that says so, and what it returns
//     is dropped: a load with side effects may then have run twice.
//   - Values are returned as stored: a value that an old version of your
//     code stored in another shape reaches Typed's codec as it is.
package cachefill
