package dlockotel_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/dlock-go/dlock"
	"github.com/dlock-go/dlock/observe"
	dlockotel "github.com/dlock-go/dlock/otel"
)

// Obtain, Refresh and Release each make a span, a child of the caller's.
func TestSpansOfCalls(t *testing.T) {
	t.Parallel()
	tm := setup(t)
	ctx, parent := tm.tracer.Tracer("test").Start(context.Background(), "request")
	lock, err := tm.locker.TryObtain(ctx, "job:spans", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if err := lock.Refresh(ctx, time.Minute); err != nil {
		t.Fatal(err)
	}
	if err := lock.Release(ctx); err != nil {
		t.Fatal(err)
	}
	parent.End()
	for _, name := range []string{"dlock obtain", "dlock refresh", "dlock release"} {
		s := tm.only(t, name)
		if s.Parent().SpanID() != parent.SpanContext().SpanID() {
			t.Errorf("%s: parent %v, want the caller's span", name, s.Parent().SpanID())
		}
		if s.Status().Code != codes.Unset {
			t.Errorf("%s: status %v", name, s.Status())
		}
		for key, want := range map[string]string{
			"db.system.name": "redis", "server.address": "127.0.0.1",
			"dlock.kind": "lock", "dlock.key": "job:spans",
		} {
			if got := attr(s, key).AsString(); got != want {
				t.Errorf("%s: %s = %q, want %q", name, key, got, want)
			}
		}
		if got := attr(s, "server.port").AsInt64(); got != int64(tm.srv.Port()) {
			t.Errorf("%s: server.port %d, want %d", name, got, tm.srv.Port())
		}
	}
	if got := attr(tm.only(t, "dlock obtain"), "dlock.result").AsString(); got != "obtained" {
		t.Errorf("dlock.result %q", got)
	}
}

// The spans of Do's obtain and release are inside the span of the Do.
func TestDoSpan(t *testing.T) {
	t.Parallel()
	tm := setup(t)
	failed := errors.New("the work failed")
	err := tm.locker.Do(context.Background(), "job:do", time.Minute, func(context.Context) error { return failed })
	if !errors.Is(err, failed) {
		t.Fatal(err)
	}
	do := tm.only(t, "dlock do")
	for _, name := range []string{"dlock obtain", "dlock release"} {
		if s := tm.only(t, name); s.Parent().SpanID() != do.SpanContext().SpanID() {
			t.Errorf("%s is not inside the Do's span", name)
		}
	}
	if do.Status().Code != codes.Error || !slices.Contains(eventNames(do), "exception") {
		t.Errorf("do span: status %v, events %v; want the work's error", do.Status(), eventNames(do))
	}
}

// A waiter's span shows its wait, and that a release woke it.
func TestWaitSpanEvents(t *testing.T) {
	t.Parallel()
	tm := setup(t)
	holder, err := tm.locker.TryObtain(context.Background(), "job:wait", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan error, 1)
	go func() {
		lock, err := tm.locker.Obtain(timeout(t, 10*time.Second), "job:wait", time.Minute,
			dlock.WithBackoff(dlock.FixedBackoff(time.Minute))) // only a release wakes it
		if err == nil {
			err = lock.Release(context.Background())
		}
		got <- err
	}()
	eventually(t, 10*time.Second, "a waiter", func() bool { return tm.sum(t, "dlock.waiters") == 1 })
	if err := holder.Release(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := <-got; err != nil {
		t.Fatal(err)
	}
	spans := tm.ended("dlock obtain")
	waited := spans[len(spans)-1]
	if events := eventNames(waited); !slices.Equal(events, []string{"dlock.wait.start", "dlock.wait.end"}) {
		t.Errorf("events %v, want the wait's start and end", events)
	}
	if !attr(waited, "dlock.woken").AsBool() || attr(waited, "dlock.attempts").AsInt64() < 2 {
		t.Errorf("attributes %v, want woken after 2 attempts or more", waited.Attributes())
	}
	if n := tm.sum(t, "dlock.waiters"); n != 0 {
		t.Errorf("%d waiters after the wait", n)
	}
}

// An obtain that times out is an error; one that finds the lock held
// without waiting is an answer.
func TestObtainOutcomes(t *testing.T) {
	t.Parallel()
	tm := setup(t)
	if _, err := tm.locker.TryObtain(context.Background(), "job:out", time.Minute); err != nil {
		t.Fatal(err)
	}
	if _, err := tm.locker.TryObtain(context.Background(), "job:out", time.Minute); !errors.Is(err, dlock.ErrNotObtained) {
		t.Fatal(err)
	}
	if _, err := tm.locker.Obtain(timeout(t, 50*time.Millisecond), "job:out", time.Minute); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatal(err)
	}
	spans := tm.ended("dlock obtain")
	if len(spans) != 3 {
		t.Fatalf("%d obtain spans, want 3", len(spans))
	}
	held, timedOut := spans[1], spans[2]
	if held.Status().Code != codes.Unset || attr(held, "dlock.result").AsString() != "held" {
		t.Errorf("held: status %v, attributes %v", held.Status(), held.Attributes())
	}
	if timedOut.Status().Code != codes.Error || attr(timedOut, "error.type").AsString() != "timeout" ||
		!slices.Contains(eventNames(timedOut), "exception") {
		t.Errorf("timed out: status %v, attributes %v, events %v", timedOut.Status(), timedOut.Attributes(), eventNames(timedOut))
	}
	for result, want := range map[string]uint64{"obtained": 1, "held": 1, "timeout": 1} {
		if got := tm.count(t, "dlock.obtain.duration", attribute.String("dlock.result", result)); got != want {
			t.Errorf("dlock.obtain.duration{%s}: %d, want %d", result, got, want)
		}
	}
}

// A fair waiter's span shows the handoff.
func TestHandoffSpanEvent(t *testing.T) {
	t.Parallel()
	tm := setup(t)
	const key = "job:fair"
	holder, err := tm.locker.TryObtain(context.Background(), key, time.Minute, dlock.WithFair())
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan error, 1)
	go func() {
		lock, err := tm.locker.Obtain(timeout(t, 10*time.Second), key, time.Second, dlock.WithFair())
		if err == nil {
			err = lock.Release(context.Background())
		}
		got <- err
	}()
	rdb := tm.srv.Client()
	eventually(t, 10*time.Second, "a waiter in the queue", func() bool {
		return rdb.ZCard(context.Background(), "dlock:queue{"+key+"}").Val() == 1 && tm.sum(t, "dlock.waiters") == 1
	})
	if err := holder.Release(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := <-got; err != nil {
		t.Fatal(err)
	}
	spans := tm.ended("dlock obtain")
	if events := eventNames(spans[len(spans)-1]); !slices.Contains(events, "dlock.handoff") {
		t.Errorf("events %v, want a handoff", events)
	}
}

// The metrics of held, lost, refreshed and failing locks.
func TestMetrics(t *testing.T) {
	t.Parallel()
	tm := setup(t)
	ctx := context.Background()
	lock, err := tm.locker.TryObtain(ctx, "job:m", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if n := tm.sum(t, "dlock.locks.held"); n != 1 {
		t.Errorf("%d locks held, want 1", n)
	}
	if err := lock.Release(ctx); err != nil {
		t.Fatal(err)
	}
	renewed, err := tm.locker.TryObtain(ctx, "job:lost", 300*time.Millisecond, dlock.WithAutoRenew(true))
	if err != nil {
		t.Fatal(err)
	}
	tm.srv.Client().Del(ctx, "job:lost")
	<-renewed.Done()
	// Done closes first (the lost signal does not wait for observers), then
	// the observer hears of the loss.
	eventually(t, 5*time.Second, "the lost lock's hold recorded", func() bool {
		return tm.count(t, "dlock.hold.duration") == 2
	})
	if n := tm.sum(t, "dlock.locks.held"); n != 0 {
		t.Errorf("%d locks held, want 0", n)
	}
	if n := tm.sum(t, "dlock.lost", attribute.String("dlock.lost.reason", "not_held")); n != 1 {
		t.Errorf("%d lost not held, want 1", n)
	}
	if n := tm.sum(t, "dlock.refresh.failures"); n != 1 {
		t.Errorf("%d refresh failures, want 1", n)
	}
	if n := tm.count(t, "dlock.hold.duration"); n != 2 {
		t.Errorf("%d holds, want 2", n)
	}
	tm.srv.Kill()
	if _, err := tm.locker.TryObtain(ctx, "job:down", time.Minute); err == nil {
		t.Fatal("obtained on a dead server")
	}
	if n := tm.sum(t, "dlock.node.errors", attribute.String("server.address", tm.srv.Addr()), attribute.String("db.operation.name", "acquire")); n != 1 {
		t.Errorf("%d node errors, want 1", n)
	}
}

// Ten thousand distinct keys make at most WithMaxKeyValues values of
// dlock.key, and one "other".
func TestKeyAttributeCardinality(t *testing.T) {
	t.Parallel()
	tm := setup(t, dlockotel.WithKeyAttribute(func(key string) string { p, _, _ := strings.Cut(key, ":"); return p }),
		dlockotel.WithMaxKeyValues(20))
	for i := range 10_000 {
		key := fmt.Sprintf("tenant%d:job", i)
		tm.observe.Observe(observe.Event{Type: observe.EventObtain, Kind: "lock", Key: key, Result: observe.ResultObtained, Duration: time.Millisecond})
		tm.observe.Observe(observe.Event{Type: observe.EventRelease, Kind: "lock", Key: key, Ended: true, Held: time.Second})
	}
	hist, _ := tm.collect(t, "dlock.hold.duration").(metricdata.Histogram[float64])
	held, _ := tm.collect(t, "dlock.locks.held").(metricdata.Sum[int64])
	if len(hist.DataPoints) != 21 || len(held.DataPoints) != 21 {
		t.Errorf("%d and %d series, want 21 (20 keys and other)", len(hist.DataPoints), len(held.DataPoints))
	}
	if n := tm.sum(t, "dlock.locks.held", attribute.String("dlock.key", "other")); n != 0 {
		t.Errorf("%d held under other, want 0", n)
	}
	if n := tm.count(t, "dlock.hold.duration"); n != 10_000 {
		t.Errorf("%d holds, want 10000", n)
	}
}

func TestBadOptions(t *testing.T) {
	t.Parallel()
	for _, opt := range []dlockotel.Option{nil, dlockotel.WithTracerProvider(nil), dlockotel.WithMeterProvider(nil),
		dlockotel.WithKeyAttribute(nil), dlockotel.WithMaxKeyValues(0)} {
		if _, err := dlockotel.New(opt); err == nil {
			t.Errorf("New with a bad option: no error")
		}
	}
}
