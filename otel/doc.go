// Package dlockotel traces dlock's calls and measures its locks with
// OpenTelemetry.
//
// An Observer is an observe.CallObserver: install it on a Client with
// dlock.WithObserver, and the Client's calls become spans of the tracer
// provider given (by default the global one, otel.GetTracerProvider):
//
//	obs, err := dlockotel.New()
//	if err != nil {
//		return err // an invalid option, or an instrument the meter provider refused
//	}
//	locker := dlock.New(rdb, dlock.WithObserver(obs))
//	defer locker.Close()
//
// # Spans
//
// Client.Obtain and Client.TryObtain make a span "dlock obtain", Client.Do
// a span "dlock do" with the spans of its obtain and release inside,
// Lock.Release and Lock.ReleaseAfter "dlock release", Lock.Refresh
// "dlock refresh". Each is a child of the span in the context the caller
// passed, and each call's Redis commands run under its span's context, so
// that a traced Redis client (redisotel) puts its command spans inside.
// This is how the Observer gets the caller's context: dlock calls
// StartCall as a call starts, with the caller's context, and runs the call
// under the context StartCall returns; the Event that ends the call carries
// it back, with the span. Automatic refreshes have no span (no caller waits
// for them): they count in the metrics.
//
// Attributes follow OpenTelemetry's semantic conventions for databases
// where they apply: db.system.name "redis", server.address and
// server.port from the node's address on a Client made by New (a Redlock
// Client has several nodes, and names none), error.type on failure. dlock's
// own are dlock.kind, dlock.key, dlock.record (true on the calls of a
// record, see dlock.AsRecord), and on obtain spans dlock.result,
// dlock.attempts, dlock.woken and dlock.handoff. Waiting shows as the span
// events "dlock.wait.start" and "dlock.wait.end", a fair handoff as
// "dlock.handoff". A call that fails records its error and sets the span's
// status to Error; an obtain that found the lock held without waiting
// (TryObtain) is an answer, not an error.
//
// # Metrics
//
// The same metrics as the module github.com/dlock-go/dlock/prometheus, by
// OpenTelemetry's naming (an exporter to Prometheus gives the same names):
//
//	dlock.obtain.duration   histogram (s)   obtains, by dlock.result
//	dlock.hold.duration     histogram (s)   holds, to their release or loss
//	dlock.locks.held        up-down counter locks obtained, not yet released or lost
//	dlock.waiters           up-down counter obtains waiting now
//	dlock.lost              counter         losses, by dlock.lost.reason
//	dlock.refresh.failures  counter         failed refreshes
//	dlock.node.errors       counter         failed node operations, by server.address and db.operation.name
//	dlock.records           counter         obtains of records, by dlock.result
//
// A record (dlock.AsRecord) is a key that its holder keeps for its ttl and
// lets expire, such as the notes of the jobs package that a job ran: it is
// no lock, and counts in dlock.records only, neither in the locks held nor,
// when it runs out as meant, in the locks lost. A lock kept after the work
// and left to expire (Lock.ReleaseAfter, dlock.WithMinHold) counts as
// released, not lost.
//
// Each but dlock.node.errors has the attribute dlock.kind: "lock",
// "multi" (Client.ObtainMulti), "semaphore", "read" or "write". Keys are no attribute of the metrics
// unless WithKeyAttribute maps them to a bounded value (at most
// WithMaxKeyValues distinct ones, the rest "other").
//
// # Metrics of the packages
//
// The Observer is also an observe.PackageObserver: the packages cachefill,
// jobs, election and idempotency, built on a Client it observes, tell it
// what they do, and packages stock and fence do when given it with
// stock.WithObserver and fence.WithObserver. Their metrics, as the Prometheus module's, with the
// attribute dlock.outcome (the values of observe's Outcome constants):
//
//	dlock.cachefill.lookups         counter         entries read, by dlock.outcome: hit, stale, miss
//	dlock.cachefill.waits           counter         misses that waited for another caller's load
//	dlock.cachefill.load.duration   histogram (s)   loads, by dlock.op (load, refresh) and dlock.outcome:
//	                                                stored, not_found, failed, not_stored
//	dlock.cachefill.fallbacks       counter         loads made directly, Redis failing
//	dlock.cachefill.gave_up         counter         loaders that stored nothing
//	dlock.jobs.runs                 counter         runs, by dlock.job.name and dlock.outcome: ran, failed,
//	                                                already_done, running_elsewhere, no_attempts_left, error
//	dlock.jobs.run.duration         histogram (s)   runs made here, by dlock.job.name and dlock.outcome
//	dlock.election.leader           up-down counter 1 while this process leads, by dlock.election.name
//	dlock.election.terms            counter         terms, by dlock.election.name and dlock.outcome:
//	                                                won, resigned, lost
//	dlock.election.leader_changes   counter         changes of leader Observe saw, by dlock.election.name
//	dlock.idempotency.calls         counter         calls, by dlock.outcome: stored, replayed, in_progress,
//	                                                mismatch, failed, interrupted, not_stored, error
//	dlock.stock.operations          counter         calls, by dlock.op (reserve, commit, cancel) and
//	                                                dlock.outcome: ok, sold_out, conflict, no_reservation,
//	                                                unknown_sku, unknown, error
//	dlock.fence.writes              counter         writes with a fence, by dlock.op (guard, redis_write)
//	                                                and dlock.outcome: written, stale, failed, error
//
// The names of jobs and elections are attributes: at most
// WithMaxNameValues distinct ones, the rest "other". Cache keys,
// idempotency keys and skus never are. A Client without an Observer costs
// the packages nothing: they build no event.
//
// The Observer keeps no goroutine; the providers are the caller's to shut
// down.
package dlockotel
