package dlockotel_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/dlock-go/dlock"
	"github.com/dlock-go/dlock/internal/testenv"
	dlockotel "github.com/dlock-go/dlock/otel"
	"github.com/dlock-go/dlock/redistest"
)

// telemetry is an Observer on in-memory exporters, and a Client it
// observes on a redis-server of the test's own.
type telemetry struct {
	spans   *tracetest.SpanRecorder
	tracer  *sdktrace.TracerProvider
	reader  *sdkmetric.ManualReader
	locker  *dlock.Client
	srv     *redistest.Server
	observe *dlockotel.Observer
}

func setup(t *testing.T, opts ...dlockotel.Option) *telemetry {
	t.Helper()
	tm := &telemetry{spans: tracetest.NewSpanRecorder(), reader: sdkmetric.NewManualReader()}
	tm.tracer = sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(tm.spans))
	meters := sdkmetric.NewMeterProvider(sdkmetric.WithReader(tm.reader))
	t.Cleanup(func() {
		_ = tm.tracer.Shutdown(context.Background())
		_ = meters.Shutdown(context.Background())
	})
	obs, err := dlockotel.New(append([]dlockotel.Option{dlockotel.WithTracerProvider(tm.tracer), dlockotel.WithMeterProvider(meters)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	tm.observe = obs
	tm.srv = redistest.NewServer(t)
	tm.locker = dlock.New(tm.srv.Client(), dlock.WithObserver(obs))
	t.Cleanup(func() { tm.locker.Close() })
	return tm
}

// ended returns the spans ended so far, by name.
func (tm *telemetry) ended(name string) []sdktrace.ReadOnlySpan {
	var out []sdktrace.ReadOnlySpan
	for _, s := range tm.spans.Ended() {
		if s.Name() == name {
			out = append(out, s)
		}
	}
	return out
}

// only returns the one span ended with name.
func (tm *telemetry) only(t *testing.T, name string) sdktrace.ReadOnlySpan {
	t.Helper()
	spans := tm.ended(name)
	if len(spans) != 1 {
		t.Fatalf("%d spans %q ended, want 1", len(spans), name)
	}
	return spans[0]
}

// attr returns the attribute key of span s.
func attr(s sdktrace.ReadOnlySpan, key string) attribute.Value {
	for _, kv := range s.Attributes() {
		if string(kv.Key) == key {
			return kv.Value
		}
	}
	return attribute.Value{}
}

func eventNames(s sdktrace.ReadOnlySpan) []string {
	var names []string
	for _, e := range s.Events() {
		names = append(names, e.Name)
	}
	return names
}

// collect returns the metric name, read now.
func (tm *telemetry) collect(t *testing.T, name string) metricdata.Aggregation {
	t.Helper()
	var rm metricdata.ResourceMetrics
	if err := tm.reader.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			if m.Name == name {
				return m.Data
			}
		}
	}
	return nil
}

// sum returns the value of the counter name whose attributes include
// want, 0 if there is none.
func (tm *telemetry) sum(t *testing.T, name string, want ...attribute.KeyValue) int64 {
	t.Helper()
	data, _ := tm.collect(t, name).(metricdata.Sum[int64])
	var total int64
	for _, p := range data.DataPoints {
		if hasAll(p.Attributes, want) {
			total += p.Value
		}
	}
	return total
}

// count returns how many values the histogram name recorded with
// attributes that include want.
func (tm *telemetry) count(t *testing.T, name string, want ...attribute.KeyValue) uint64 {
	t.Helper()
	data, _ := tm.collect(t, name).(metricdata.Histogram[float64])
	var total uint64
	for _, p := range data.DataPoints {
		if hasAll(p.Attributes, want) {
			total += p.Count
		}
	}
	return total
}

func hasAll(set attribute.Set, want []attribute.KeyValue) bool {
	return !slices.ContainsFunc(want, func(kv attribute.KeyValue) bool {
		v, ok := set.Value(kv.Key)
		return !ok || v != kv.Value
	})
}

// eventually fails the test unless cond becomes true within d.
func eventually(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	testenv.Eventually(t, d, what, cond)
}

func timeout(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}
