package dlockotel

import (
	"context"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/dlock-go/dlock/internal/labels"
	"github.com/dlock-go/dlock/observe"
)

// DefaultMaxNameValues is how many distinct values of the attributes
// dlock.job.name and dlock.election.name (the names of jobs and elections)
// the metrics admit by default: see WithMaxNameValues.
const DefaultMaxNameValues = 100

// OtherNameValue is the dlock.job.name or dlock.election.name of every
// name past the first WithMaxNameValues ones.
const OtherNameValue = "other"

// packageInstruments are the metrics of the packages built on dlock (see
// the package documentation), recorded from observe.PackageEvents, as the
// Prometheus module's.
type packageInstruments struct {
	cacheLookups   metric.Int64Counter
	cacheWaits     metric.Int64Counter
	cacheLoads     metric.Float64Histogram
	cacheFallbacks metric.Int64Counter
	cacheGaveUp    metric.Int64Counter
	jobRuns        metric.Int64Counter
	jobDurations   metric.Float64Histogram
	leader         metric.Int64UpDownCounter
	terms          metric.Int64Counter
	leaderChanges  metric.Int64Counter
	idempotency    metric.Int64Counter
	stock          metric.Int64Counter
	fence          metric.Int64Counter

	names *labels.Bounded // the values of dlock.job.name and dlock.election.name
}

func (m *packageInstruments) init(meter metric.Meter, maxNames int) error {
	m.names = labels.NewBounded(maxNames, OtherNameValue)
	var err, e error
	m.cacheLookups, e = meter.Int64Counter("dlock.cachefill.lookups", metric.WithUnit("{lookup}"),
		metric.WithDescription("Reads of a cache entry by a fetch of package cachefill, by outcome: hit, stale (invalidated, served while refreshed), miss."))
	err = join(err, e)
	m.cacheWaits, e = meter.Int64Counter("dlock.cachefill.waits", metric.WithUnit("{wait}"),
		metric.WithDescription("Fetches of package cachefill that missed and waited for another caller's load."))
	err = join(err, e)
	m.cacheLoads, e = meter.Float64Histogram("dlock.cachefill.load.duration", metric.WithUnit("s"),
		metric.WithDescription("How long the load functions of package cachefill ran, by op (load for a miss, refresh) and outcome: stored, not_found, failed, not_stored."),
		metric.WithExplicitBucketBoundaries(obtainBoundaries...))
	err = join(err, e)
	m.cacheFallbacks, e = meter.Int64Counter("dlock.cachefill.fallbacks", metric.WithUnit("{fetch}"),
		metric.WithDescription("Fetches of package cachefill that called their load function directly because Redis failed (WithFallback)."))
	err = join(err, e)
	m.cacheGaveUp, e = meter.Int64Counter("dlock.cachefill.gave_up", metric.WithUnit("{load}"),
		metric.WithDescription("Loaders of package cachefill that stored nothing and handed the load to the callers waiting for them."))
	err = join(err, e)
	m.jobRuns, e = meter.Int64Counter("dlock.jobs.runs", metric.WithUnit("{run}"),
		metric.WithDescription("Runs of package jobs, by job name and outcome: ran, failed, already_done, running_elsewhere, no_attempts_left, error."))
	err = join(err, e)
	m.jobDurations, e = meter.Float64Histogram("dlock.jobs.run.duration", metric.WithUnit("s"),
		metric.WithDescription("How long the runs of package jobs that ran here took, by job name and outcome: ran, failed."),
		metric.WithExplicitBucketBoundaries(holdBoundaries...))
	err = join(err, e)
	m.leader, e = meter.Int64UpDownCounter("dlock.election.leader", metric.WithUnit("{term}"),
		metric.WithDescription("Terms of the election (package election) that this process leads now: 1 while it leads, 0 otherwise."))
	err = join(err, e)
	m.terms, e = meter.Int64Counter("dlock.election.terms", metric.WithUnit("{term}"),
		metric.WithDescription("Terms of this process in an election (package election), by outcome: won, resigned, lost."))
	err = join(err, e)
	m.leaderChanges, e = meter.Int64Counter("dlock.election.leader_changes", metric.WithUnit("{change}"),
		metric.WithDescription("Changes of an election's leader (or of an empty seat) that an Observe of this process saw."))
	err = join(err, e)
	m.idempotency, e = meter.Int64Counter("dlock.idempotency.calls", metric.WithUnit("{call}"),
		metric.WithDescription("Calls and requests of package idempotency, by outcome: stored, replayed, in_progress (409), mismatch (422), failed, interrupted, not_stored, error."))
	err = join(err, e)
	m.stock, e = meter.Int64Counter("dlock.stock.operations", metric.WithUnit("{operation}"),
		metric.WithDescription("Calls of package stock that reached Redis, by op (reserve, commit, cancel) and outcome: ok, sold_out, conflict, no_reservation, unknown_sku, unknown, error."))
	err = join(err, e)
	m.fence, e = meter.Int64Counter("dlock.fence.writes", metric.WithUnit("{write}"),
		metric.WithDescription("Writes with a lock's fence through package fence, by op (guard: a SQL transaction; redis_write) and outcome: written, stale (a higher fence was recorded: the writer's lock was lost), failed (Guard's function returned an error), error."))
	return join(err, e)
}

// observe records e.
func (m *packageInstruments) observe(e observe.PackageEvent) {
	ctx := context.Background()
	outcome := attribute.String("dlock.outcome", e.Outcome)
	switch e.Package {
	case observe.PackageCachefill:
		m.cachefill(ctx, e, outcome)
	case observe.PackageJobs:
		attrs := metric.WithAttributes(attribute.String("dlock.job.name", m.names.Label(e.Name)), outcome)
		m.jobRuns.Add(ctx, 1, attrs)
		if e.Outcome == observe.OutcomeRan || e.Outcome == observe.OutcomeFailed {
			m.jobDurations.Record(ctx, e.Duration.Seconds(), attrs)
		}
	case observe.PackageElection:
		name := attribute.String("dlock.election.name", m.names.Label(e.Name))
		switch e.Op {
		case observe.OpTerm:
			m.terms.Add(ctx, 1, metric.WithAttributes(name, outcome))
			delta := int64(-1)
			if e.Outcome == observe.OutcomeWon {
				delta = 1
			}
			m.leader.Add(ctx, delta, metric.WithAttributes(name))
		case observe.OpLeaderChange:
			m.leaderChanges.Add(ctx, 1, metric.WithAttributes(name))
		}
	case observe.PackageIdempotency:
		m.idempotency.Add(ctx, 1, metric.WithAttributes(outcome))
	case observe.PackageStock:
		m.stock.Add(ctx, 1, metric.WithAttributes(attribute.String("dlock.op", e.Op), outcome))
	case observe.PackageFence:
		m.fence.Add(ctx, 1, metric.WithAttributes(attribute.String("dlock.op", e.Op), outcome))
	}
}

func (m *packageInstruments) cachefill(ctx context.Context, e observe.PackageEvent, outcome attribute.KeyValue) {
	switch e.Op {
	case observe.OpLookup:
		m.cacheLookups.Add(ctx, 1, metric.WithAttributes(outcome))
	case observe.OpWait:
		m.cacheWaits.Add(ctx, 1)
	case observe.OpLoad, observe.OpRefresh:
		m.cacheLoads.Record(ctx, e.Duration.Seconds(), metric.WithAttributes(attribute.String("dlock.op", e.Op), outcome))
	case observe.OpFallback:
		m.cacheFallbacks.Add(ctx, 1)
	case observe.OpGaveUp:
		m.cacheGaveUp.Add(ctx, 1)
	}
}

// ObservePackage records e in the metrics; it makes the Observer an
// observe.PackageObserver, told what the packages built on the Clients it
// observes do (cachefill, jobs, election, idempotency; stock and fence
// through their WithObserver). Package events make no spans: the spans of the
// locks they take tell their calls.
func (o *Observer) ObservePackage(e observe.PackageEvent) {
	o.packages.observe(e)
}

var _ observe.PackageObserver = (*Observer)(nil)
