package observe

import "time"

// PackageObserver is an Observer that is also told what the packages built
// on dlock do: cachefill, jobs, election and idempotency tell the
// Observers of the *dlock.Client they are given (dlock.WithObserver) that
// implement it; stock, which takes a go-redis client, tells the one given
// with stock.WithObserver, and fence the one given with fence.WithObserver.
// So one Observer installed on the Client (and given to those two) sees
// the locks and the packages both. The modules
// github.com/dlock-go/dlock/prometheus and github.com/dlock-go/dlock/otel
// implement it.
//
// ObservePackage is called synchronously, from the goroutine of the
// package's caller or from one of the package's own, possibly from many at
// once: as Observe, it must be safe for concurrent use, fast, and must not
// block. A package whose Client has no PackageObserver builds no
// PackageEvent and allocates nothing for it.
type PackageObserver interface {
	Observer
	ObservePackage(e PackageEvent)
}

// PackageEvent is what a package tells a PackageObserver: one thing one of
// its calls did. Package, Op and Outcome take only the values of the
// constants below, a few each, so each is fit for a metric label as it is.
type PackageEvent struct {
	// Package names the package: PackageCachefill, PackageJobs,
	// PackageElection, PackageIdempotency, PackageStock or PackageFence.
	Package string
	// Op is what happened, one of the package's Op constants (OpLookup,
	// OpRun, OpTerm, ...).
	Op string
	// Outcome is how it ended, one of the Op's Outcome constants; "" for
	// the Ops that have none (OpWait, OpFallback, OpGaveUp, OpLeaderChange).
	Outcome string
	// Name is the name of the job (PackageJobs) or of the election
	// (PackageElection), and "" for the other packages. Programs have a
	// few of them, but nothing bounds them: a metric label of it should
	// admit a bounded number of values, as the metric modules do.
	Name string
	// Key is the key of the call: the cache key (PackageCachefill), the
	// idempotency key (PackageIdempotency), the sku (PackageStock; the
	// first of a call on several), the resource or key written
	// (PackageFence), and "" for the other packages. It is
	// unbounded: do not use it as a metric label.
	Key string
	// Duration is how long a load (OpLoad, OpRefresh), a run of a job
	// (OpRun with OutcomeRan or OutcomeFailed) or a fenced write
	// (PackageFence) took; 0 for the other events.
	Duration time.Duration
}

// The packages that tell PackageEvents.
const (
	PackageCachefill   = "cachefill"
	PackageJobs        = "jobs"
	PackageElection    = "election"
	PackageIdempotency = "idempotency"
	PackageStock       = "stock"
	PackageFence       = "fence"
)

// The Ops of PackageCachefill. A Get that joins a fetch of the same key
// already under way in the process (a Cache shares its fetches) tells
// nothing of its own: these count the fetches, which are what Redis and
// the load functions see.
const (
	// OpLookup: a fetch read the entry, first: OutcomeHit (found),
	// OutcomeStale (found, but marked by Invalidate: served while a
	// refresh loads it anew) or OutcomeMiss (absent: the fetch fills it,
	// and its later reads, while it waits for a loader, are not told).
	OpLookup = "lookup"
	// OpWait: a fetch that missed waits for another caller's load, in this
	// process or another, rather than loading.
	OpWait = "wait"
	// OpLoad: a load function called for a miss ended: OutcomeStored (its
	// value is stored), OutcomeNotFound (it returned ErrNotFound),
	// OutcomeFailed (it returned another error, or its lock was lost), or
	// OutcomeNotStored (it gave a value that could not be stored).
	// Duration is how long it ran.
	OpLoad = "load"
	// OpRefresh: a load for an early or background refresh of an entry
	// that was found ended, with the Outcomes and Duration of OpLoad.
	OpRefresh = "refresh"
	// OpFallback: Redis failed, and a fetch called its load function
	// directly (cachefill.WithFallback).
	OpFallback = "fallback"
	// OpGaveUp: a loader stored nothing and told the callers that waited
	// for it, which then elect the next loader.
	OpGaveUp = "gave_up"
)

// The Outcomes of OpLookup, OpLoad and OpRefresh.
const (
	OutcomeHit       = "hit"
	OutcomeStale     = "stale"
	OutcomeMiss      = "miss"
	OutcomeStored    = "stored"
	OutcomeNotFound  = "not_found"
	OutcomeNotStored = "not_stored"
	// OutcomeFailed is also an Outcome of OpRun and OpCall.
	OutcomeFailed = "failed"
)

// The Op of PackageJobs, OpRun, tells how a call of Run, or a Begin and its
// Finish, ended for the job Name: OutcomeRan or OutcomeFailed (the job ran
// here; Duration is how long), OutcomeAlreadyDone, OutcomeRunningElsewhere,
// OutcomeNoAttemptsLeft (it did not run here), or OutcomeError (Redis
// failed before it ran).
const (
	OpRun                   = "run"
	OutcomeRan              = "ran"
	OutcomeAlreadyDone      = "already_done"
	OutcomeRunningElsewhere = "running_elsewhere"
	OutcomeNoAttemptsLeft   = "no_attempts_left"
	// OutcomeError is also an Outcome of OpCall and of the Ops of
	// PackageStock: Redis failed, or the call was refused (closed, its
	// context ended).
	OutcomeError = "error"
)

// The Ops of PackageElection, for the election Name.
const (
	// OpTerm: a term of this process began or ended: OutcomeWon (a
	// Campaign won the seat), then once OutcomeResigned (Resign) or
	// OutcomeLost (the lease was lost, or its Client closed). A gauge of
	// leadership counts OutcomeWon up and the two others down.
	OpTerm          = "term"
	OutcomeWon      = "won"
	OutcomeResigned = "resigned"
	OutcomeLost     = "lost"
	// OpLeaderChange: an Observe of this process saw the seat change
	// hands: a new leader, or the seat empty.
	OpLeaderChange = "leader_change"
)

// The Op of PackageIdempotency, OpCall, tells how a call of Store.Do, or
// a request through Store.Middleware, ended: OutcomeStored (fn ran and its
// outcome is stored), OutcomeReplayed (a stored outcome was returned),
// OutcomeInProgress (another call runs fn for the key: the Middleware's
// 409), OutcomeMismatch (the key was used with another fingerprint: 422),
// OutcomeFailed (fn ran and failed; nothing stored, the key is free),
// OutcomeInterrupted (fn ran and its lock was lost: nothing stored),
// OutcomeNotStored (fn ran, but its outcome could not be stored, or
// whether it was is unknown), or OutcomeError (Redis failed before fn ran,
// or the call was refused).
const (
	OpCall             = "call"
	OutcomeReplayed    = "replayed"
	OutcomeInProgress  = "in_progress"
	OutcomeMismatch    = "mismatch"
	OutcomeInterrupted = "interrupted"
)

// The Ops of PackageStock, one per call that reached Redis (a call refused
// for bad input tells nothing): OpReserve (Reserve, ReserveAll), OpCommit
// (Commit, CommitAll), OpCancel (Cancel, CancelAll). Their Outcomes:
// OutcomeOK (it took effect, or had already), OutcomeSoldOut (OpReserve
// only), OutcomeConflict (another quantity), OutcomeNoReservation
// (OpCommit, OpCancel), OutcomeUnknownSKU, OutcomeUnknown (sent, but no
// answer came) and OutcomeError.
const (
	OpReserve            = "reserve"
	OpCommit             = "commit"
	OpCancel             = "cancel"
	OutcomeOK            = "ok"
	OutcomeSoldOut       = "sold_out"
	OutcomeConflict      = "conflict"
	OutcomeNoReservation = "no_reservation"
	OutcomeUnknownSKU    = "unknown_sku"
	OutcomeUnknown       = "unknown"
)

// The Ops of PackageFence, for one write of resource or key Key with a
// lock's fence: OpGuard (fence.Guard, a SQL transaction) and OpRedisWrite
// (fence.Redis's Set and HSet). Their Outcomes: OutcomeWritten (the fence
// passed and the write is committed), OutcomeStale (a higher fence was
// recorded: nothing written; the writer's lock was lost), OutcomeFailed
// (Guard's function returned an error: rolled back), or OutcomeError (the
// database or Redis failed, or bad input).
const (
	OpGuard        = "guard"
	OpRedisWrite   = "redis_write"
	OutcomeWritten = "written"
)
