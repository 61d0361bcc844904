package dlockprom

import (
	"fmt"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/dlock-go/dlock/internal/labels"
	"github.com/dlock-go/dlock/observe"
)

// DefaultMaxNameLabels is how many distinct values of the labels job_name
// and election (the names of jobs and elections) a Collector admits by
// default: see WithMaxNameLabels.
const DefaultMaxNameLabels = 100

// OtherNameLabel is the value of the label job_name or election of every name
// past the first WithMaxNameLabels ones.
const OtherNameLabel = "other"

// packageMetrics are the metrics of the packages built on dlock (see the
// package documentation), counted from observe.PackageEvents.
type packageMetrics struct {
	cacheLookups   *prometheus.CounterVec
	cacheWaits     prometheus.Counter
	cacheLoads     *prometheus.HistogramVec
	cacheFallbacks prometheus.Counter
	cacheGaveUp    prometheus.Counter
	jobRuns        *prometheus.CounterVec
	jobDurations   *prometheus.HistogramVec
	leader         *prometheus.GaugeVec
	terms          *prometheus.CounterVec
	leaderChanges  *prometheus.CounterVec
	idempotency    *prometheus.CounterVec
	stock          *prometheus.CounterVec
	fence          *prometheus.CounterVec

	names *labels.Bounded // the values of the labels job_name and election
}

func newPackageMetrics(cfg config) *packageMetrics {
	m := &packageMetrics{names: labels.NewBounded(cfg.maxNameLabels, OtherNameLabel)}
	m.cacheLookups = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "dlock_cachefill_lookups_total", Help: "Reads of a cache entry by a fetch of package cachefill, by outcome: hit, stale (invalidated, served while refreshed), miss.",
	}, []string{"outcome"})
	m.cacheWaits = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "dlock_cachefill_waits_total", Help: "Fetches of package cachefill that missed and waited for another caller's load.",
	})
	m.cacheLoads = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name: "dlock_cachefill_load_duration_seconds", Help: "How long the load functions of package cachefill ran, by op (load for a miss, refresh) and outcome: stored, not_found, failed, not_stored.",
		Buckets: cfg.obtainBuckets,
	}, []string{"op", "outcome"})
	m.cacheFallbacks = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "dlock_cachefill_fallbacks_total", Help: "Fetches of package cachefill that called their load function directly because Redis failed (WithFallback).",
	})
	m.cacheGaveUp = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "dlock_cachefill_gave_up_total", Help: "Loaders of package cachefill that stored nothing and handed the load to the callers waiting for them.",
	})
	m.jobRuns = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "dlock_jobs_runs_total", Help: "Runs of package jobs, by job_name and outcome: ran, failed, already_done, running_elsewhere, no_attempts_left, error.",
	}, []string{"job_name", "outcome"})
	m.jobDurations = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name: "dlock_jobs_run_duration_seconds", Help: "How long the runs of package jobs that ran here took, by job_name and outcome: ran, failed.",
		Buckets: cfg.holdBuckets,
	}, []string{"job_name", "outcome"})
	m.leader = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "dlock_election_leader", Help: "Terms of the election (package election) that this process leads now: 1 while it leads, 0 otherwise.",
	}, []string{"election"})
	m.terms = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "dlock_election_terms_total", Help: "Terms of this process in an election (package election), by outcome: won, resigned, lost.",
	}, []string{"election", "outcome"})
	m.leaderChanges = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "dlock_election_leader_changes_total", Help: "Changes of an election's leader (or of an empty seat) that an Observe of this process saw.",
	}, []string{"election"})
	m.idempotency = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "dlock_idempotency_calls_total", Help: "Calls and requests of package idempotency, by outcome: stored, replayed, in_progress (409), mismatch (422), failed, interrupted, not_stored, error.",
	}, []string{"outcome"})
	m.stock = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "dlock_stock_operations_total", Help: "Calls of package stock that reached Redis, by op (reserve, commit, cancel) and outcome: ok, sold_out, conflict, no_reservation, unknown_sku, unknown, error.",
	}, []string{"op", "outcome"})
	m.fence = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "dlock_fence_writes_total", Help: "Writes with a lock's fence through package fence, by op (guard: a SQL transaction; redis_write) and outcome: written, stale (a higher fence was recorded: the writer's lock was lost), failed (Guard's function returned an error), error.",
	}, []string{"op", "outcome"})
	return m
}

// collectors returns the metrics, to describe and collect.
func (m *packageMetrics) collectors() []prometheus.Collector {
	return []prometheus.Collector{m.cacheLookups, m.cacheWaits, m.cacheLoads, m.cacheFallbacks, m.cacheGaveUp,
		m.jobRuns, m.jobDurations, m.leader, m.terms, m.leaderChanges, m.idempotency, m.stock, m.fence}
}

// observe counts e.
func (m *packageMetrics) observe(e observe.PackageEvent) {
	switch e.Package {
	case observe.PackageCachefill:
		m.cachefill(e)
	case observe.PackageJobs:
		job := m.names.Label(e.Name)
		m.jobRuns.WithLabelValues(job, e.Outcome).Inc()
		if e.Outcome == observe.OutcomeRan || e.Outcome == observe.OutcomeFailed {
			m.jobDurations.WithLabelValues(job, e.Outcome).Observe(e.Duration.Seconds())
		}
	case observe.PackageElection:
		m.election(e)
	case observe.PackageIdempotency:
		m.idempotency.WithLabelValues(e.Outcome).Inc()
	case observe.PackageStock:
		m.stock.WithLabelValues(e.Op, e.Outcome).Inc()
	case observe.PackageFence:
		m.fence.WithLabelValues(e.Op, e.Outcome).Inc()
	}
}

func (m *packageMetrics) cachefill(e observe.PackageEvent) {
	switch e.Op {
	case observe.OpLookup:
		m.cacheLookups.WithLabelValues(e.Outcome).Inc()
	case observe.OpWait:
		m.cacheWaits.Inc()
	case observe.OpLoad, observe.OpRefresh:
		m.cacheLoads.WithLabelValues(e.Op, e.Outcome).Observe(e.Duration.Seconds())
	case observe.OpFallback:
		m.cacheFallbacks.Inc()
	case observe.OpGaveUp:
		m.cacheGaveUp.Inc()
	}
}

func (m *packageMetrics) election(e observe.PackageEvent) {
	name := m.names.Label(e.Name)
	switch e.Op {
	case observe.OpTerm:
		m.terms.WithLabelValues(name, e.Outcome).Inc()
		if e.Outcome == observe.OutcomeWon {
			m.leader.WithLabelValues(name).Inc()
		} else {
			m.leader.WithLabelValues(name).Dec()
		}
	case observe.OpLeaderChange:
		m.leaderChanges.WithLabelValues(name).Inc()
	}
}

// WithMaxNameLabels sets how many distinct values of the labels job_name
// (the names of jobs) and election (the names of elections) the Collector
// admits: the first n it meets, together; the others count under
// OtherNameLabel. n must be positive; the default is DefaultMaxNameLabels.
func WithMaxNameLabels(n int) Option {
	return func(c *config) {
		if n <= 0 {
			c.err = fmt.Errorf("dlockprom: WithMaxNameLabels(%d): must be positive", n)
		}
		c.maxNameLabels = n
	}
}

// ObservePackage counts e; it makes the Collector an
// observe.PackageObserver, told what the packages built on the Clients it
// observes do (cachefill, jobs, election, idempotency; stock and fence
// through their WithObserver).
func (c *Collector) ObservePackage(e observe.PackageEvent) {
	c.pkg.observe(e)
}
