// Package dlock provides distributed locks on Redis that are correct under
// faults: only the holder can release or refresh a lock, every holding gets
// a fencing token, and every call answers within its context's deadline.
//
// A Client keeps locks on one Redis deployment, given as a go-redis client:
// a single server, a primary watched by Sentinel, or a Cluster.
//
//	locker := dlock.New(rdb)
//	lock, err := locker.Obtain(ctx, "report:2026-11-21", 30*time.Second)
//	if err != nil {
//		return err // errors.Is(err, dlock.ErrNotObtained): someone else has it
//	}
//	defer lock.Release(context.WithoutCancel(ctx))
//
// Besides locks, a Client has two kinds of shared hold, with the same
// Lock handle: Client.Semaphore (at most N holders at once) and
// Client.RWMutex (many readers or one writer, writers not starved). A
// lock, a semaphore and an RW lock under one name refuse each other with
// ErrWrongType. Client.ObtainMulti takes the locks of several keys at
// once, all of them or none, as one Lock.
//
// # Guarantees
//
//   - Mutual exclusion on one Redis server: while a lock's key exists with
//     our token, no other Obtain, and no plain SET key value NX client (such
//     as redis-py's Lock), can take it.
//   - Release, Refresh and TTL act only if the key still holds our token
//     (compare and act in one Lua script), so a holder whose lock expired
//     can never release or extend the next holder's lock: it gets ErrNotHeld.
//   - Tokens are 128 bits from crypto/rand.
//   - Fence numbers strictly increase per key across holders, across the
//     key's expiry, and across a restart of Redis without persistence, as
//     long as the server's clock does not step backwards.
//   - Acquire, release and refresh are one round trip each. Scripts run with
//     EVALSHA and fall back to EVAL when the server lost them (restart,
//     SCRIPT FLUSH). Concurrent calls of one Client share round trips: those
//     that come while two calls are in flight on their node go out together,
//     as one pipeline, each with its own reply or error; a lone call is sent
//     at once.
//   - Every call returns by the time its context is done, even if Redis hangs.
//     An acquire whose reply is lost, or arrives after its caller gave up, is
//     released in the background (Close waits for that).
//   - Every call has one effect. go-redis sends a command again when its
//     reply is late (MaxRetries, 3 by default), and every copy runs; the
//     copies of a call find what the first did and answer as it did. An
//     answer never claims an effect that did not happen, nor denies one
//     that did; a call whose answer did not come back returns an error
//     wrapping ErrOutcomeUnknown.
//
// # Limits
//
// A lock is a lease: it ends when its time to live runs out, whether or not
// the holder is done, and a holder paused longer than that (garbage
// collection, a stopped VM) resumes without knowing. Until tells when to stop
// trusting the lock; fencing tokens let the protected resource reject a
// late writer. Redis itself can lose a lock: a restart without persistence,
// or a failover to a replica that had not received the key yet. Keep
// maxmemory-policy at noeviction, since every lock key has an expiry and
// volatile-* and allkeys-* policies may evict it. Client.CheckDeployment
// reports such settings.
//
// # Waiting and holding
//
// Obtain waits for a release message (one Pub/Sub connection per Client,
// shared by its waiters), the holder's expiry, or a Backoff delay, whichever
// comes first; WithFair makes waiters take turns in arrival order. A lock
// obtained WithAutoRenew is refreshed by the Client until it is released,
// and Lock.Done closes the moment it is lost; Client.Do wraps all of it
// around a function whose context is cancelled on loss.
//
// # Redlock
//
// NewRedlock returns a Client that keeps each lock on a majority of
// independent Redis nodes, with the same API. See docs/safety.md for what
// each kind of deployment guarantees, under which assumptions.
//
// # Keys
//
// A lock uses its key as given, so other clients see and respect it, plus
// side keys in the key's Cluster slot: "dlock:fence..." followed by the key
// keeps the last fence while the lock lives (on a Redlock, it is empty until
// the first Lock.Fence), and its name is also the channel a release is
// published on; in fair mode "dlock:queue..." and
// "dlock:lease..." hold the waiters, and expire when nobody waits; a
// multi-key holding (ObtainMulti) keeps its keys in "dlock:multi..." beside
// each of them while it lasts, for Inspect. A
// release leaves "dlock:freed..." followed by the key and the token for as
// long as go-redis may send it again (44 s with its default options), so
// that a copy sent again knows its own release; a ForceRelease leaves
// "dlock:forced..." for a minute, so that a copy of it that go-redis sends
// again deletes nothing more. Lock keys
// may be any bytes, including binary data and Unicode; keys of any other
// Redis type are refused with ErrWrongType.
package dlock
