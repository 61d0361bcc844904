package dlockprom

import (
	"fmt"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/dlock-go/dlock/internal/labels"
	"github.com/dlock-go/dlock/observe"
)

// DefaultMaxKeyLabels is how many distinct values of the key label a
// Collector admits by default: see WithMaxKeyLabels.
const DefaultMaxKeyLabels = 100

// OtherKeyLabel is the value of the key label of every key mapped to a
// value past the first WithMaxKeyLabels ones.
const OtherKeyLabel = "other"

// Buckets of the histograms, in seconds: obtains take from a round trip
// (under a millisecond) to a long wait; holds from a quick job to an hour.
var (
	DefaultObtainBuckets = prometheus.ExponentialBucketsRange(0.0005, 60, 16)
	DefaultHoldBuckets   = prometheus.ExponentialBucketsRange(0.01, 3600, 16)
)

// Option configures a Collector.
type Option func(*config)

type config struct {
	keyLabel      func(key string) string
	maxKeyLabels  int
	maxNameLabels int
	obtainBuckets []float64
	holdBuckets   []float64
	err           error
}

// WithKeyLabel adds a label key to every metric but
// dlock_node_errors_total, whose value is label(key) for an event on the
// lock key: for instance the part before the first ':', so that
// "invoice:42" and "invoice:43" count together. It should have few values;
// the Collector admits at most WithMaxKeyLabels of them anyway. The
// default is no key label.
func WithKeyLabel(label func(key string) string) Option {
	return func(c *config) {
		if label == nil {
			c.err = fmt.Errorf("dlockprom: WithKeyLabel(nil)")
		}
		c.keyLabel = label
	}
}

// WithMaxKeyLabels sets how many distinct values of the key label (see
// WithKeyLabel) the Collector admits: the first n it meets. Keys mapped to
// any other value count under OtherKeyLabel. n must be positive; the
// default is DefaultMaxKeyLabels.
func WithMaxKeyLabels(n int) Option {
	return func(c *config) {
		if n <= 0 {
			c.err = fmt.Errorf("dlockprom: WithMaxKeyLabels(%d): must be positive", n)
		}
		c.maxKeyLabels = n
	}
}

// WithBuckets sets the buckets, in seconds, of dlock_obtain_duration_seconds
// (and dlock_cachefill_load_duration_seconds) and
// dlock_hold_duration_seconds (and dlock_jobs_run_duration_seconds). The
// defaults are DefaultObtainBuckets and
// DefaultHoldBuckets.
func WithBuckets(obtain, hold []float64) Option {
	return func(c *config) {
		if len(obtain) == 0 || len(hold) == 0 {
			c.err = fmt.Errorf("dlockprom: WithBuckets needs buckets for both histograms")
		}
		c.obtainBuckets, c.holdBuckets = obtain, hold
	}
}

// Collector is a prometheus.Collector of dlock's metrics (see the package
// documentation) and the observe.PackageObserver that counts them. Make one with
// New, register it, and install it on Clients with dlock.WithObserver. It
// is safe for concurrent use.
type Collector struct {
	obtain          *prometheus.HistogramVec
	hold            *prometheus.HistogramVec
	held            *prometheus.GaugeVec
	waiters         *prometheus.GaugeVec
	lost            *prometheus.CounterVec
	refreshFailures *prometheus.CounterVec
	nodeErrors      *prometheus.CounterVec
	records         *prometheus.CounterVec
	pkg             *packageMetrics
	all             []prometheus.Collector

	keyLabel func(string) string // nil: no key label
	keys     *labels.Bounded     // the values of the key label: the first maxKeyLabels met, and OtherKeyLabel
}

// New returns a Collector. It returns an error for an invalid option.
func New(opts ...Option) (*Collector, error) {
	cfg := config{maxKeyLabels: DefaultMaxKeyLabels, maxNameLabels: DefaultMaxNameLabels, obtainBuckets: DefaultObtainBuckets, holdBuckets: DefaultHoldBuckets}
	for _, opt := range opts {
		if opt == nil {
			return nil, fmt.Errorf("dlockprom: nil Option")
		}
		if opt(&cfg); cfg.err != nil {
			return nil, cfg.err
		}
	}
	labelNames := func(names ...string) []string {
		names = append([]string{"kind"}, names...)
		if cfg.keyLabel != nil {
			names = append(names, "key")
		}
		return names
	}
	c := &Collector{keyLabel: cfg.keyLabel, keys: labels.NewBounded(cfg.maxKeyLabels, OtherKeyLabel)}
	c.obtain = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name: "dlock_obtain_duration_seconds", Help: "How long obtaining a lock took, waiting included, by result.",
		Buckets: cfg.obtainBuckets,
	}, labelNames("result"))
	c.hold = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name: "dlock_hold_duration_seconds", Help: "How long a lock was held, from its obtain to its release or loss.",
		Buckets: cfg.holdBuckets,
	}, labelNames())
	c.held = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "dlock_locks_held", Help: "Locks obtained and not yet released or lost.",
	}, labelNames())
	c.waiters = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "dlock_waiters", Help: "Obtains waiting for a lock that another holder has.",
	}, labelNames())
	c.lost = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "dlock_lost_total", Help: "Locks lost while held, by reason: not_held (found gone or taken), expired (no refresh in time), closed (client closed).",
	}, labelNames("reason"))
	c.refreshFailures = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "dlock_refresh_failures_total", Help: "Refreshes of a lock that failed or found it gone, manual and automatic.",
	}, labelNames())
	c.nodeErrors = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "dlock_node_errors_total", Help: "Operations on a Redis node that failed, by node and operation.",
	}, []string{"node", "op"})
	c.records = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "dlock_records_total", Help: "Obtains of records (dlock.AsRecord), kept apart from locks, by result: obtained (written), held (one was there), timeout, canceled, error.",
	}, labelNames("result"))
	c.pkg = newPackageMetrics(cfg)
	c.all = append([]prometheus.Collector{c.obtain, c.hold, c.held, c.waiters, c.lost, c.refreshFailures, c.nodeErrors, c.records},
		c.pkg.collectors()...)
	if cfg.keyLabel == nil {
		// Series that alerts use exist from the start, at 0, so that
		// rate() and increase() see the first loss.
		for _, reason := range []observe.LostReason{observe.LostNotHeld, observe.LostExpired, observe.LostClosed} {
			c.lost.WithLabelValues("lock", reason.String())
		}
		c.refreshFailures.WithLabelValues("lock")
		c.held.WithLabelValues("lock")
		c.waiters.WithLabelValues("lock")
	}
	return c, nil
}

// Describe sends the descriptions of the metrics; part of
// prometheus.Collector.
func (c *Collector) Describe(ch chan<- *prometheus.Desc) {
	for _, m := range c.all {
		m.Describe(ch)
	}
}

// Collect sends the metrics; part of prometheus.Collector.
func (c *Collector) Collect(ch chan<- prometheus.Metric) {
	for _, m := range c.all {
		m.Collect(ch)
	}
}

// Observe counts e; it makes the Collector an observe.Observer.
//
// The events of a record (dlock.AsRecord) count in dlock_records_total
// only: a record is no lock, neither held nor lost.
func (c *Collector) Observe(e observe.Event) {
	if e.Record {
		if e.Type == observe.EventObtain {
			c.records.WithLabelValues(c.values(e, e.Result.String())...).Inc()
		}
		return
	}
	switch e.Type {
	case observe.EventObtain:
		c.obtain.WithLabelValues(c.values(e, e.Result.String())...).Observe(e.Duration.Seconds())
		if e.Result == observe.ResultObtained {
			c.held.WithLabelValues(c.values(e)...).Inc()
		}
	case observe.EventWaitStart:
		c.waiters.WithLabelValues(c.values(e)...).Inc()
	case observe.EventWaitEnd:
		c.waiters.WithLabelValues(c.values(e)...).Dec()
	case observe.EventRelease:
		c.ended(e)
	case observe.EventLost:
		c.lost.WithLabelValues(c.values(e, e.Reason.String())...).Inc()
		c.ended(e)
	case observe.EventRefresh:
		if e.Err != nil {
			c.refreshFailures.WithLabelValues(c.values(e)...).Inc()
		}
	case observe.EventNodeError:
		c.nodeErrors.WithLabelValues(e.Node, e.Op).Inc()
	}
}

// ended counts a lock that e ended, if it did.
func (c *Collector) ended(e observe.Event) {
	if !e.Ended {
		return
	}
	values := c.values(e)
	c.held.WithLabelValues(values...).Dec()
	c.hold.WithLabelValues(values...).Observe(e.Held.Seconds())
}

// values returns the label values of e: its kind, then extra, then its key
// label if there is one.
func (c *Collector) values(e observe.Event, extra ...string) []string {
	values := make([]string, 0, 3)
	values = append(values, e.Kind)
	values = append(values, extra...)
	if c.keyLabel != nil {
		values = append(values, c.keys.Label(c.keyLabel(e.Key)))
	}
	return values
}

var _ observe.PackageObserver = (*Collector)(nil)
