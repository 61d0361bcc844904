package dlockprom_test

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/redis/go-redis/v9"

	"github.com/dlock-go/dlock"
	"github.com/dlock-go/dlock/jobs"
	dlockprom "github.com/dlock-go/dlock/prometheus"
	"github.com/dlock-go/dlock/stock"
)

// The Collector installed on a Client counts what the packages built on
// it do; stock is given it with stock.WithObserver. Job names are labels,
// at most WithMaxNameLabels of them.
func ExampleCollector_ObservePackage() {
	rdb := redis.NewClient(&redis.Options{Addr: redisAddr})
	defer rdb.Close()
	metrics, err := dlockprom.New(dlockprom.WithMaxNameLabels(20))
	if err != nil {
		fmt.Println(err)
		return
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(metrics)
	locker := dlock.New(rdb, dlock.WithObserver(metrics))
	defer locker.Close()

	runner, err := jobs.New(locker)
	if err != nil {
		fmt.Println(err)
		return
	}
	ctx := context.Background()
	slot := time.Now().Add(time.Hour).Truncate(time.Nanosecond) // a slot of this run only
	for range 2 {
		_, _ = runner.Run(ctx, "example-report", slot, func(context.Context) error { return nil })
	}
	inv, err := stock.New(rdb, stock.WithPrefix("example-metrics"), stock.WithObserver(metrics))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer inv.Close()
	_ = inv.Set(ctx, "lamp", 0)
	defer inv.Delete(ctx, "lamp")
	_ = inv.Reserve(ctx, "lamp", "order-1", 1, time.Minute)

	err = testutil.GatherAndCompare(reg, strings.NewReader(`
# HELP dlock_jobs_runs_total Runs of package jobs, by job_name and outcome: ran, failed, already_done, running_elsewhere, no_attempts_left, error.
# TYPE dlock_jobs_runs_total counter
dlock_jobs_runs_total{job_name="example-report",outcome="already_done"} 1
dlock_jobs_runs_total{job_name="example-report",outcome="ran"} 1
# HELP dlock_stock_operations_total Calls of package stock that reached Redis, by op (reserve, commit, cancel) and outcome: ok, sold_out, conflict, no_reservation, unknown_sku, unknown, error.
# TYPE dlock_stock_operations_total counter
dlock_stock_operations_total{op="reserve",outcome="sold_out"} 1
`), "dlock_jobs_runs_total", "dlock_stock_operations_total")
	fmt.Println(err)
	// Output: <nil>
}

// A program with many job or election names admits the first 500 as
// labels, and counts the others as OtherNameLabel.
func ExampleWithMaxNameLabels() {
	metrics, err := dlockprom.New(dlockprom.WithMaxNameLabels(500))
	if err != nil {
		fmt.Println(err)
		return
	}
	prometheus.MustRegister(metrics)
	defer prometheus.Unregister(metrics)
	fmt.Println("beyond 500 names, job_name is", dlockprom.OtherNameLabel)
	// Output: beyond 500 names, job_name is other
}
