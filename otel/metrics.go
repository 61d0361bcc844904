package dlockotel

import (
	"context"
	"math"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"

	"github.com/dlock-go/dlock/internal/labels"
	"github.com/dlock-go/dlock/observe"
)

// instruments are the Observer's metrics, as the Prometheus module's.
type instruments struct {
	obtain          metric.Float64Histogram
	hold            metric.Float64Histogram
	held            metric.Int64UpDownCounter
	waiters         metric.Int64UpDownCounter
	lost            metric.Int64Counter
	refreshFailures metric.Int64Counter
	nodeErrors      metric.Int64Counter
	records         metric.Int64Counter

	keyValue func(string) string // nil: no dlock.key
	keys     *labels.Bounded     // the values of dlock.key: the first maxKeys met, and OtherKeyValue
}

// Bucket boundaries of the histograms, in seconds, as the Prometheus
// module's defaults: obtains from a round trip to a long wait, holds from
// a quick job to an hour.
var (
	obtainBoundaries = exponentialRange(0.0005, 60, 16)
	holdBoundaries   = exponentialRange(0.01, 3600, 16)
)

// exponentialRange returns n boundaries from lo to hi, each a constant
// factor above the one before (prometheus.ExponentialBucketsRange).
func exponentialRange(lo, hi float64, n int) []float64 {
	factor := math.Pow(hi/lo, 1/float64(n-1))
	b := make([]float64, n)
	for i := range b {
		b[i] = lo * math.Pow(factor, float64(i))
	}
	return b
}

func (m *instruments) init(meter metric.Meter, keyValue func(string) string, maxKeys int) error {
	m.keyValue, m.keys = keyValue, labels.NewBounded(maxKeys, OtherKeyValue)
	var err, e error
	m.obtain, e = meter.Float64Histogram("dlock.obtain.duration", metric.WithUnit("s"),
		metric.WithDescription("How long obtaining a lock took, waiting included, by result."),
		metric.WithExplicitBucketBoundaries(obtainBoundaries...))
	err = join(err, e)
	m.hold, e = meter.Float64Histogram("dlock.hold.duration", metric.WithUnit("s"),
		metric.WithDescription("How long a lock was held, from its obtain to its release or loss."),
		metric.WithExplicitBucketBoundaries(holdBoundaries...))
	err = join(err, e)
	m.held, e = meter.Int64UpDownCounter("dlock.locks.held", metric.WithUnit("{lock}"),
		metric.WithDescription("Locks obtained and not yet released or lost."))
	err = join(err, e)
	m.waiters, e = meter.Int64UpDownCounter("dlock.waiters", metric.WithUnit("{waiter}"),
		metric.WithDescription("Obtains waiting for a lock that another holder has."))
	err = join(err, e)
	m.lost, e = meter.Int64Counter("dlock.lost", metric.WithUnit("{lock}"),
		metric.WithDescription("Locks lost while held, by reason: not_held, expired, closed."))
	err = join(err, e)
	m.refreshFailures, e = meter.Int64Counter("dlock.refresh.failures", metric.WithUnit("{refresh}"),
		metric.WithDescription("Refreshes of a lock that failed or found it gone, manual and automatic."))
	err = join(err, e)
	m.nodeErrors, e = meter.Int64Counter("dlock.node.errors", metric.WithUnit("{error}"),
		metric.WithDescription("Operations on a Redis node that failed, by node and operation."))
	err = join(err, e)
	m.records, e = meter.Int64Counter("dlock.records", metric.WithUnit("{record}"),
		metric.WithDescription("Obtains of records (dlock.AsRecord), kept apart from locks, by result: obtained (written), held (one was there), timeout, canceled, error."))
	return join(err, e)
}

func join(err, e error) error {
	if err != nil {
		return err
	}
	return e
}

// observe records e. The metric calls take no context of the caller's:
// events of the background have none, and exemplars are not kept. The
// events of a record (dlock.AsRecord) count in dlock.records only: a
// record is no lock, neither held nor lost.
func (m *instruments) observe(e observe.Event) {
	ctx := context.Background()
	if e.Record {
		if e.Type == observe.EventObtain {
			m.records.Add(ctx, 1, m.attrs(e, attribute.String("dlock.result", e.Result.String())))
		}
		return
	}
	switch e.Type {
	case observe.EventObtain:
		m.obtain.Record(ctx, e.Duration.Seconds(), m.attrs(e, attribute.String("dlock.result", e.Result.String())))
		if e.Result == observe.ResultObtained {
			m.held.Add(ctx, 1, m.attrs(e))
		}
	case observe.EventWaitStart:
		m.waiters.Add(ctx, 1, m.attrs(e))
	case observe.EventWaitEnd:
		m.waiters.Add(ctx, -1, m.attrs(e))
	case observe.EventRelease:
		m.ended(ctx, e)
	case observe.EventLost:
		m.lost.Add(ctx, 1, m.attrs(e, attribute.String("dlock.lost.reason", e.Reason.String())))
		m.ended(ctx, e)
	case observe.EventRefresh:
		if e.Err != nil {
			m.refreshFailures.Add(ctx, 1, m.attrs(e))
		}
	case observe.EventNodeError:
		m.nodeErrors.Add(ctx, 1, metric.WithAttributes(semconv.ServerAddress(e.Node), semconv.DBOperationName(e.Op)))
	}
}

// ended records a lock that e ended, if it did.
func (m *instruments) ended(ctx context.Context, e observe.Event) {
	if !e.Ended {
		return
	}
	attrs := m.attrs(e)
	m.held.Add(ctx, -1, attrs)
	m.hold.Record(ctx, e.Held.Seconds(), attrs)
}

// attrs returns the attributes of e's metrics: its kind, extra, and its
// key's value if there is one.
func (m *instruments) attrs(e observe.Event, extra ...attribute.KeyValue) metric.MeasurementOption {
	kvs := make([]attribute.KeyValue, 0, 3)
	kvs = append(kvs, attribute.String("dlock.kind", e.Kind))
	kvs = append(kvs, extra...)
	if m.keyValue != nil {
		kvs = append(kvs, attribute.String("dlock.key", m.keys.Label(m.keyValue(e.Key))))
	}
	return metric.WithAttributes(kvs...)
}
