package dlockotel_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/dlock-go/dlock"
	"github.com/dlock-go/dlock/internal/testenv"
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

// docCode is the code of the package's doc (doc.go), as written, so that
// it compiles; TestDocCodeIsTested checks that the two agree.
func docCode(rdb *redis.Client) error {
	obs, err := dlockotel.New()
	if err != nil {
		return err // an invalid option, or an instrument the meter provider refused
	}
	locker := dlock.New(rdb, dlock.WithObserver(obs))
	defer locker.Close()
	return nil
}

func TestDocCodeIsTested(t *testing.T) {
	_ = docCode
	testenv.DocCodeIsTested(t, 1)
}
