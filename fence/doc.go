// Package fence checks a lock's fence where the data is written: in a SQL
// database (database/sql) or in another Redis deployment.
//
// A dlock lock is a lease. A holder that stops for longer than its ttl (a
// garbage-collection pause, a stopped VM, a slow call) loses the lock
// without knowing, another client takes it, and the first one, back,
// writes anyway: its check of Lock.Err or Lock.Until came before the
// pause. No lock on its own can stop that write; the resource can. Every
// holding of a dlock lock has a fence (Lock.Fence, DLOCK_FENCE for
// `dlock run`) that is larger than the fence of every earlier holding of
// the same key. A resource that keeps the highest fence it has accepted,
// and refuses a lower one in the same atomic step as the write, refuses
// the late holder's write once the next holder has written.
//
//	lock, err := locker.Obtain(ctx, "report:nightly", time.Minute, dlock.WithAutoRenew(true))
//	...
//	err = fence.Guard(ctx, db, lock.Key(), lock.Fence(), func(tx *sql.Tx) error {
//		_, err := tx.ExecContext(ctx, "UPDATE reports SET body = $1 WHERE id = 1", body)
//		return err
//	})
//	if errors.Is(err, fence.ErrStale) {
//		// a later holder has written: this one's work is void
//	}
//
// A lock's holder gets its fence from Redis at its first Lock.Fence: ask
// for it while the lock is held, before the work. A holder that asks only
// after it lost the lock gets 0, which Guard and Redis refuse as stale.
//
// # SQL: Guard
//
// [Guard] runs a function in a transaction that begins by recording the
// fence for the resource (usually the lock's key) in a table of fences, if
// no higher fence is recorded; otherwise it returns an error matching
// [ErrStale] and runs nothing. An equal fence passes: one holding may
// write many times, and two holdings never share a fence. The statement
// that records the fence locks the resource's row of the table until the
// transaction ends, so writers of one resource serialize there: a lower
// fence that comes while a higher one's transaction is open waits, then
// is refused. [CreateTable] creates the table; its doc gives the DDL.
//
// Guard knows PostgreSQL and SQLite, and tells them apart by the
// database/sql driver (pgx, lib/pq, modernc.org/sqlite, mattn/go-sqlite3,
// ...) or, for a driver it does not know, by one probing query per call;
// [WithDialect] names the dialect and skips both. Dialect [MySQL] has its
// statements written for MySQL 8 and MariaDB, but dlock's tests run
// PostgreSQL 15 and SQLite only.
//
// SQLite has one writer at a time for the whole database. A transaction
// of Guard writes first, so it takes SQLite's write lock at its first
// statement, and a concurrent writer waits for the lock as long as the
// connection's busy timeout allows (modernc.org/sqlite:
// "?_pragma=busy_timeout(5000)"; mattn/go-sqlite3: "?_busy_timeout=5000"),
// then gets SQLITE_BUSY ("database is locked"), which Guard returns: it
// does not retry. Without a busy timeout, every concurrent writer gets it
// at once. WAL mode (journal_mode=WAL) lets readers read meanwhile.
//
// # Redis: Redis.Set and Redis.HSet
//
// A [Redis] writes to a Redis deployment (usually not the one that holds
// the locks) with one Lua script per write, which compares the fence with
// the one recorded beside the value and writes only if it is not lower:
// [Redis.Set] keeps the fence in a key of its own in the value's Cluster
// slot, [Redis.HSet] in a field of the hash. A call that go-redis sends
// again when its reply is late (MaxRetries, by default) runs twice with
// the same fence and value: the second copy passes as an equal fence and
// writes the same value again.
//
// # What a fence protects, and what it does not
//
// A fence protects the writes that go through the check, against every
// holder whose lock ended before a later holder wrote: paused processes,
// lost locks, a Redis restarted without persistence or a failover that
// lost the lock (as long as the fences still grow, see docs/safety.md),
// and two holders at once on a Redlock that lost a node. End to end it
// needs:
//
//   - every write to the resource to go through the check: a writer that
//     does not check (a script, another service, a migration) is not
//     refused, and a check on one table does not guard another table that
//     is written outside Guard's transaction;
//   - the fences of one lock key only, on one resource: fences of two keys
//     do not compare;
//   - the recorded fence to live as long as the data: a database restored
//     from a backup, or a Redis restarted without persistence, forgets the
//     highest fence and accepts a late holder once more;
//   - a fence from a lock that was held: Lock.Fence is 0 when none could be
//     had (a Redlock whose write-back failed), and Guard refuses 0.
//
// It does not make the work itself exclusive: two holders can compute at
// once, and only the first one's write after the other's is refused. It
// does not guard reads: a late holder can still read data that a later
// holder is changing, and act on it outside the resource (an e-mail, a
// call to another service). It does not order two writes of one holding
// (equal fences pass). And a refused write is not undone elsewhere: what
// the late holder did before its write stays done.
package fence
