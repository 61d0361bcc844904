package dlockotel_test

import (
	"context"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/dlock-go/dlock"
	dlockotel "github.com/dlock-go/dlock/otel"
)

// Trace a Client's calls. A program passes its own providers, or none for
// the global ones (otel.SetTracerProvider, otel.SetMeterProvider).
func Example() {
	rdb := redis.NewClient(&redis.Options{Addr: redisAddr})
	defer rdb.Close()

	spans := tracetest.NewSpanRecorder() // in a program: an exporter
	tracer := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(spans))
	defer tracer.Shutdown(context.Background())

	observer, err := dlockotel.New(dlockotel.WithTracerProvider(tracer))
	if err != nil {
		panic(err)
	}
	locker := dlock.New(rdb, dlock.WithObserver(observer))
	defer locker.Close()

	err = locker.Do(context.Background(), "report:daily", time.Minute, func(context.Context) error {
		return nil // the work
	})
	if err != nil {
		panic(err)
	}
	for _, s := range spans.Ended() {
		fmt.Println(s.Name())
	}
	// Output:
	// dlock obtain
	// dlock release
	// dlock do
}
