package dlockotel_test

import (
	"context"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/dlock-go/dlock"
	"github.com/dlock-go/dlock/election"
	dlockotel "github.com/dlock-go/dlock/otel"
)

// The Observer installed on a Client measures what the packages built on
// it do: here, the gauge dlock.election.leader while this process leads.
// Election names are attributes, at most WithMaxNameValues of them.
func ExampleObserver_ObservePackage() {
	rdb := redis.NewClient(&redis.Options{Addr: redisAddr})
	defer rdb.Close()
	reader := sdkmetric.NewManualReader()
	meters := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	defer meters.Shutdown(context.Background())
	obs, err := dlockotel.New(dlockotel.WithMeterProvider(meters), dlockotel.WithMaxNameValues(20))
	if err != nil {
		fmt.Println(err)
		return
	}
	locker := dlock.New(rdb, dlock.WithObserver(obs))
	defer locker.Close()
	seat, err := election.New(locker, "example-primary-"+time.Now().Format(time.RFC3339Nano))
	if err != nil {
		fmt.Println(err)
		return
	}
	ctx := context.Background()
	lead, err := seat.Campaign(ctx, "host-a")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer lead.Resign(ctx)

	var rm metricdata.ResourceMetrics
	if err := reader.Collect(ctx, &rm); err != nil {
		fmt.Println(err)
		return
	}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			if m.Name == "dlock.election.leader" {
				fmt.Println(m.Name, m.Data.(metricdata.Sum[int64]).DataPoints[0].Value)
			}
		}
	}
	// Output: dlock.election.leader 1
}

// A program with many job or election names admits the first 500 as
// attribute values, and records the others as OtherNameValue.
func ExampleWithMaxNameValues() {
	obs, err := dlockotel.New(dlockotel.WithMaxNameValues(500))
	if err != nil {
		fmt.Println(err)
		return
	}
	_ = obs // install it with dlock.WithObserver
	fmt.Println("beyond 500 names, dlock.job.name is", dlockotel.OtherNameValue)
	// Output: beyond 500 names, dlock.job.name is other
}
