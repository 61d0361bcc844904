package dlockprom_test

import (
	"context"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/redis/go-redis/v9"

	"github.com/dlock-go/dlock"
	dlockprom "github.com/dlock-go/dlock/prometheus"
)

// instrument returns a dlock Client whose metrics mux serves on /metrics.
// (docs/operating.md shows this function.)
func instrument(rdb redis.UniversalClient, mux *http.ServeMux) (*dlock.Client, error) {
	metrics, err := dlockprom.New(dlockprom.WithKeyLabel(func(key string) string {
		prefix, _, _ := strings.Cut(key, ":") // "invoice:42" counts as "invoice"
		return prefix
	}))
	if err != nil {
		return nil, err
	}
	reg := prometheus.NewRegistry() // or prometheus.DefaultRegisterer, with promhttp.Handler()
	reg.MustRegister(metrics)
	mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	return dlock.New(rdb, dlock.WithObserver(metrics)), nil
}

// Export the metrics of a Client's locks on /metrics.
func Example() {
	rdb := redis.NewClient(&redis.Options{Addr: redisAddr})
	defer rdb.Close()
	mux := http.NewServeMux()
	locker, err := instrument(rdb, mux)
	if err != nil {
		panic(err)
	}
	defer locker.Close()
	srv := httptest.NewServer(mux)
	defer srv.Close()

	lock, err := locker.TryObtain(context.Background(), "invoice:42", time.Minute)
	if err != nil {
		panic(err)
	}
	defer lock.Release(context.Background())

	resp, err := srv.Client().Get(srv.URL + "/metrics")
	if err != nil {
		panic(err)
	}
	defer resp.Body.Close()
	page, _ := io.ReadAll(resp.Body)
	for line := range strings.Lines(string(page)) {
		if strings.HasPrefix(line, "dlock_locks_held") {
			fmt.Print(line)
		}
	}
	// Output:
	// dlock_locks_held{key="invoice",kind="lock"} 1
}

// Observe a Client's locks with a Collector registered with Prometheus's
// default registry. (The package's doc shows these lines.)
func ExampleNew() {
	rdb := redis.NewClient(&redis.Options{Addr: "localhost:6379"})
	metrics, err := dlockprom.New()
	if err != nil {
		log.Fatal(err)
	}
	prometheus.MustRegister(metrics)
	locker := dlock.New(rdb, dlock.WithObserver(metrics))
	defer locker.Close()
}
