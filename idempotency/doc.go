// Package idempotency runs an operation once per idempotency key across
// processes, and answers every repetition with the first outcome: charge a
// customer once however often the pay button is clicked, or a request is
// retried after a timeout.
//
// A Store keeps, in Redis, the outcome of each key's first call for a
// retention period (WithRetention), and runs one call at a time per key
// under a dlock lock. Store.Do is for any function; Store.Middleware guards
// net/http handlers with the Idempotency-Key header of the IETF draft
// draft-ietf-httpapi-idempotency-key-header:
//
//	store, err := idempotency.New(locker) // locker: the process's dlock.Client
//	if err != nil {
//		return err
//	}
//	defer store.Close() // before locker.Close
//	http.Handle("POST /payments", store.Middleware(payHandler))
//
// # Guarantees
//
//   - For each key, fn (or the handler) runs in at most one call at a time,
//     across every process that shares the Redis: the call holds the key's
//     lock while fn runs, and the lock is renewed as long as fn runs.
//   - Once a call has stored its outcome, every call with the key gets that
//     outcome, and fn does not run, until the retention ends.
//   - An outcome is stored only by a call that still holds the key's lock,
//     checked in the same Lua script that writes it, and never over another
//     outcome: a call that lost its lock (paused past its ttl, cut off from
//     Redis) cannot overwrite anything; it gets an error wrapping
//     ErrNotStored.
//   - A call that finds the key's fn running elsewhere waits until it ends,
//     woken by the release of its lock rather than by polling, and gets its
//     outcome (Do, and the Middleware with WithWaitForInProgress); or it
//     gets ErrInProgress, 409 for the Middleware, at once.
//   - A call with a key used before with another fingerprint gets
//     ErrMismatch (422) and fn does not run.
//   - Failures are not stored: an error from fn that is not Final, a 5xx,
//     408 or 429 response, a handler's panic, a handler that wrote nothing
//     once its context ended, a result too large to store. The key is free
//     again at once, and the next call runs fn. A handler that wrote nothing
//     once its context ended gets the Middleware's 503 "interrupted" in its
//     place, never net/http's empty 200.
//   - Redis failing before fn ran is an error wrapping ErrUnavailable (503),
//     and fn does not run, unless the Middleware has WithFailOpen. Every call
//     ends when its context does, even if Redis hangs.
//   - A replay costs one round trip to Redis and takes no lock: the key's
//     acquire finds the stored result first, in the same script. A first
//     call costs two: that acquire, and the release that stores its result
//     while the lock is still its own.
//
// # Failure modes
//
// Once begun, fn's work is not undone by this package. When its lock is
// lost while fn runs (a network partition longer than the lock's ttl, a
// process paused that long), fn's context is cancelled, but fn may already
// have acted, and another call may then run fn again. Pass
// the key on to the systems fn calls where they accept one (payment
// providers do), or check a fence there (see dlock.Lock.Fence).
//
// A process that dies while running fn leaves the key blocked until its
// lock's ttl runs out (WithLockTTL, 10 seconds by default); then the next
// call runs fn again, since nothing was stored. Whether the dead call's fn
// acted is not known to the Store.
//
// If fn finished but its outcome was not stored (the lock was lost, or
// Redis restarted in between), the caller gets the outcome with an error
// wrapping ErrNotStored, and the next call runs fn again. If Redis failed
// or did not answer while the outcome was being stored, whether it was is
// not known: the error wraps ErrMaybeStored, and the next call gets the
// stored outcome or runs fn again. The Middleware has already sent the
// response then; it logs which of the two happened.
//
// Stored outcomes live in Redis and share its durability: a restart without
// persistence, a failover to a replica that missed the write, or an
// eviction policy other than noeviction can lose them, and a repeated
// request then runs fn again. Keep the records with the same care as the
// data fn changes.
//
// # The Middleware's answers
//
// The Middleware answers with a problem (RFC 9457, application/problem+json)
// whose "type" is the base set by WithProblemType, "#", and one of:
//
//	missing-key      400  no Idempotency-Key header on a guarded request
//	malformed-key    400  not a quoted string, empty, over 255 bytes, or sent twice
//	unreadable-body  400  the request body could not be read
//	body-too-large   413  the body is larger than WithMaxBody
//	key-reused       422  the key was used with another payload
//	in-progress      409  a request with the key is being processed (Retry-After: 1)
//	unavailable      503  Redis failed or did not answer in time (Retry-After: 1)
//	interrupted      503  the handler stopped without a response once its context
//	                      ended, as when the key's lock was lost (Retry-After: 1)
//	internal         500  a misconfigured Middleware, or an unreadable stored response
//
// # Metrics
//
// A Store tells the observers of its Client (dlock.WithObserver) that are
// observe.PackageObservers how each call of Do and each request through
// the Middleware ended (observe.OpCall): stored, replayed, in progress
// (the Middleware's 409), mismatch (422), failed (fn's error, nothing
// stored), interrupted (the key's lock lost while fn ran), not stored, or
// an error before fn ran. Calls refused for bad input, and requests
// without a key, are not told. The Prometheus and OpenTelemetry modules
// make metrics of them; the keys are no label. Without such an observer
// nothing is built.
//
// # Keys in Redis
//
// Each idempotency key uses two Redis keys, named by the Store's prefix
// (WithPrefix) and a 128-bit digest of the key: "idem:{digest}:result"
// holds the outcome for the retention, and "idem:{digest}:lock" is the
// dlock lock of the call running fn (plus dlock's side key in the same
// Cluster slot). The digest in braces is a hash tag, so both keys live in
// one Cluster slot. The Middleware's keys are the client's key within the
// request's scope (WithScope).
//
// The package writes to Redis only through the key's dlock lock: its
// acquire, and the release that stores the outcome. Each is safe when
// go-redis sends it again after a ReadTimeout (its default MaxRetries is
// 3), as dlock's are.
//
// # The dlock Client
//
// A Store takes the locks of its keys on the dlock Client given to New:
// the Client's observers (dlock.WithObserver) see them, its holder name
// names them, and the Store reports to its logger unless WithLogger says
// otherwise. The Client is the caller's: Store.Close does not close it;
// close it after the Store.
//
// A Store runs on one Redis deployment (a server, Sentinel or a Cluster),
// not on a Redlock quorum: the lock's acquire looks for the stored outcome
// and its release stores it, in one step on the server that keeps both
// keys, which a quorum of independent servers cannot do. New refuses a
// Client made by dlock.NewRedlock with an error wrapping ErrInvalidOption.
//
// # Tests
//
// The package's tests need redis-server (see package redistest). Its slow
// fault tests, which pause Redis for seconds while calls are in flight so
// that go-redis sends them again, run only with DLOCK_SLOW_FAULTS=1 in the
// environment; one of them runs always.
package idempotency
