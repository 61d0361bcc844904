// Command otel traces and meters a Client with the OpenTelemetry SDK's span
// recorder and manual reader, as a consumer of the otel module does.
package main

import (
	"context"
	"fmt"
	"log"
	"os"
	"slices"
	"time"

	"github.com/redis/go-redis/v9"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/dlock-go/dlock"
	dlockotel "github.com/dlock-go/dlock/otel"
)

func main() {
	if len(os.Args) != 2 {
		log.Fatal("usage: otel REDIS_ADDR")
	}
	if err := observe(context.Background(), os.Args[1]); err != nil {
		log.Fatal(err)
	}
}

func observe(ctx context.Context, addr string) error {
	rdb := redis.NewClient(&redis.Options{Addr: addr})
	defer rdb.Close()
	spans := tracetest.NewSpanRecorder()
	tracer := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(spans))
	defer tracer.Shutdown(context.WithoutCancel(ctx))
	reader := sdkmetric.NewManualReader()
	meter := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	defer meter.Shutdown(context.WithoutCancel(ctx))

	observer, err := dlockotel.New(dlockotel.WithTracerProvider(tracer), dlockotel.WithMeterProvider(meter))
	if err != nil {
		return err
	}
	locker := dlock.New(rdb, dlock.WithObserver(observer))
	defer locker.Close()
	err = locker.Do(ctx, "release-check:otel", time.Minute, func(context.Context) error {
		return nil // the work
	})
	if err != nil {
		return err
	}

	var names []string
	for _, s := range spans.Ended() {
		names = append(names, s.Name())
	}
	if !slices.Contains(names, "dlock do") || !slices.Contains(names, "dlock obtain") {
		return fmt.Errorf("spans %q lack dlock do and dlock obtain", names)
	}
	var data metricdata.ResourceMetrics
	if err := reader.Collect(ctx, &data); err != nil {
		return err
	}
	var metrics []string
	for _, scope := range data.ScopeMetrics {
		for _, m := range scope.Metrics {
			metrics = append(metrics, m.Name)
		}
	}
	if !slices.Contains(metrics, "dlock.obtain.duration") {
		return fmt.Errorf("metrics %q lack dlock.obtain.duration", metrics)
	}
	fmt.Printf("spans %q, metrics %q\n", names, metrics)
	return nil
}
