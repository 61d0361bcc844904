package dlockotel

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/dlock-go/dlock"
	"github.com/dlock-go/dlock/observe"
)

// ScopeName is the instrumentation scope of the Observer's tracer and meter.
const ScopeName = "github.com/dlock-go/dlock/otel"

// Option configures an Observer.
type Option func(*config)

type config struct {
	tracers  trace.TracerProvider
	meters   metric.MeterProvider
	keyValue func(string) string
	maxKeys  int
	maxNames int
	err      error
}

// WithTracerProvider sets where the spans go. The default is the global
// provider, otel.GetTracerProvider().
func WithTracerProvider(tp trace.TracerProvider) Option {
	return func(c *config) {
		if tp == nil {
			c.err = errors.New("dlockotel: WithTracerProvider(nil)")
		}
		c.tracers = tp
	}
}

// WithMeterProvider sets where the metrics go. The default is the global
// provider, otel.GetMeterProvider().
func WithMeterProvider(mp metric.MeterProvider) Option {
	return func(c *config) {
		if mp == nil {
			c.err = errors.New("dlockotel: WithMeterProvider(nil)")
		}
		c.meters = mp
	}
}

// DefaultMaxKeyValues is how many distinct values of the attribute
// dlock.key the metrics admit by default: see WithMaxKeyValues.
const DefaultMaxKeyValues = 100

// OtherKeyValue is the dlock.key of the metrics of every key mapped past
// the first WithMaxKeyValues values.
const OtherKeyValue = "other"

// WithKeyAttribute gives the metrics an attribute dlock.key, whose value
// is value(key) for an event on the lock key: for instance the part before
// the first ':'. At most WithMaxKeyValues distinct values are admitted. The
// default is no such attribute. (Spans always carry the whole key.)
func WithKeyAttribute(value func(key string) string) Option {
	return func(c *config) {
		if value == nil {
			c.err = errors.New("dlockotel: WithKeyAttribute(nil)")
		}
		c.keyValue = value
	}
}

// WithMaxKeyValues sets how many distinct values of dlock.key the metrics
// admit (see WithKeyAttribute): the first n met; the others count as
// OtherKeyValue. n must be positive; the default is DefaultMaxKeyValues.
func WithMaxKeyValues(n int) Option {
	return func(c *config) {
		if n <= 0 {
			c.err = fmt.Errorf("dlockotel: WithMaxKeyValues(%d): must be positive", n)
		}
		c.maxKeys = n
	}
}

// WithMaxNameValues sets how many distinct values of dlock.job.name and
// dlock.election.name the metrics admit: the first n met, together; the
// others count as OtherNameValue. n must be positive; the default is
// DefaultMaxNameValues.
func WithMaxNameValues(n int) Option {
	return func(c *config) {
		if n <= 0 {
			c.err = fmt.Errorf("dlockotel: WithMaxNameValues(%d): must be positive", n)
		}
		c.maxNames = n
	}
}

// Observer traces and measures what dlock Clients do (see the package
// documentation), and measures what the packages built on them do. It is
// an observe.CallObserver and an observe.PackageObserver; install it with
// dlock.WithObserver (and stock.WithObserver). It is safe for concurrent use, and one Observer may
// serve several Clients.
type Observer struct {
	tracer   trace.Tracer
	metrics  instruments
	packages packageInstruments
}

var _ observe.CallObserver = (*Observer)(nil)

// New returns an Observer. It returns an error for an invalid option, or
// if the meter provider refuses an instrument.
func New(opts ...Option) (*Observer, error) {
	cfg := config{maxKeys: DefaultMaxKeyValues, maxNames: DefaultMaxNameValues}
	for _, opt := range opts {
		if opt == nil {
			return nil, errors.New("dlockotel: nil Option")
		}
		if opt(&cfg); cfg.err != nil {
			return nil, cfg.err
		}
	}
	if cfg.tracers == nil {
		cfg.tracers = otel.GetTracerProvider()
	}
	if cfg.meters == nil {
		cfg.meters = otel.GetMeterProvider()
	}
	o := &Observer{tracer: cfg.tracers.Tracer(ScopeName)}
	meter := cfg.meters.Meter(ScopeName)
	if err := o.metrics.init(meter, cfg.keyValue, cfg.maxKeys); err != nil {
		return nil, err
	}
	if err := o.packages.init(meter, cfg.maxNames); err != nil {
		return nil, err
	}
	return o, nil
}

// spanKey is the context key of the span StartCall started, so that
// Observe ends that one and not one of the caller's.
type spanKey struct{}

var spanNames = map[observe.EventType]string{
	observe.EventObtain: "dlock obtain", observe.EventRelease: "dlock release",
	observe.EventRefresh: "dlock refresh", observe.EventDo: "dlock do",
}

// StartCall starts the span of a call; part of observe.CallObserver.
func (o *Observer) StartCall(e observe.Event) context.Context {
	name, ok := spanNames[e.Type]
	if !ok {
		return e.Context
	}
	kind := trace.SpanKindClient // one round trip, or one quorum round
	if e.Type == observe.EventObtain || e.Type == observe.EventDo {
		kind = trace.SpanKindInternal // attempts and waits
	}
	attrs := []attribute.KeyValue{semconv.DBSystemNameRedis, attribute.String("dlock.kind", e.Kind), attribute.String("dlock.key", e.Key)}
	if e.Record {
		attrs = append(attrs, attribute.Bool("dlock.record", true))
	}
	attrs = append(attrs, serverAttributes(e.Node)...)
	ctx, span := o.tracer.Start(e.Context, name, trace.WithSpanKind(kind), trace.WithAttributes(attrs...))
	return context.WithValue(ctx, spanKey{}, span)
}

// serverAttributes are server.address and server.port of a node named by
// its address; none for a Cluster or a Redlock.
func serverAttributes(node string) []attribute.KeyValue {
	host, port, err := net.SplitHostPort(node)
	if node == "" || err != nil {
		return nil
	}
	attrs := []attribute.KeyValue{semconv.ServerAddress(host)}
	if p, err := strconv.Atoi(port); err == nil {
		attrs = append(attrs, semconv.ServerPort(p))
	}
	return attrs
}

// Observe records e in the metrics and in the span of its call; part of
// observe.Observer.
func (o *Observer) Observe(e observe.Event) {
	o.metrics.observe(e)
	if e.Context == nil {
		return
	}
	span, ok := e.Context.Value(spanKey{}).(trace.Span)
	if !ok {
		return
	}
	switch e.Type {
	case observe.EventWaitStart:
		span.AddEvent("dlock.wait.start")
	case observe.EventWaitEnd:
		span.AddEvent("dlock.wait.end", trace.WithAttributes(attribute.Float64("dlock.wait", e.Wait.Seconds())))
	case observe.EventHandoff:
		span.AddEvent("dlock.handoff")
	case observe.EventObtain:
		span.SetAttributes(attribute.String("dlock.result", e.Result.String()), attribute.Int("dlock.attempts", e.Attempts),
			attribute.Bool("dlock.woken", e.Woken), attribute.Bool("dlock.handoff", e.Handoff))
		o.end(span, e, e.Result != observe.ResultHeld)
	case observe.EventRelease, observe.EventRefresh, observe.EventDo:
		o.end(span, e, true)
	}
}

// end ends the span of a call that e ends, with its error if failed.
func (o *Observer) end(span trace.Span, e observe.Event, failed bool) {
	if e.Err != nil && failed {
		span.RecordError(e.Err)
		span.SetStatus(codes.Error, e.Err.Error())
		span.SetAttributes(semconv.ErrorTypeKey.String(errorType(e)))
	}
	span.End()
}

// errorType is a low-cardinality name of e's error, for error.type.
func errorType(e observe.Event) string {
	switch {
	case e.Type == observe.EventObtain && e.Result != observe.ResultFailed:
		return e.Result.String() // timeout, canceled
	case errors.Is(e.Err, dlock.ErrNotHeld):
		return "not_held"
	case errors.Is(e.Err, dlock.ErrLockLost):
		return "lost"
	case errors.Is(e.Err, dlock.ErrClosed):
		return "closed"
	case errors.Is(e.Err, context.DeadlineExceeded):
		return "timeout"
	}
	return semconv.ErrorTypeOther.Value.AsString()
}
