package dlockprom_test

import (
	"context"
	"fmt"
	"io"
	"net/http/httptest"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/redis/go-redis/v9"

	"github.com/dlock-go/dlock"
	dlockprom "github.com/dlock-go/dlock/prometheus"
)

// Export the metrics of a Client's locks on /metrics.
func Example() {
	rdb := redis.NewClient(&redis.Options{Addr: redisAddr})
	defer rdb.Close()

	metrics, err := dlockprom.New(dlockprom.WithKeyLabel(func(key string) string {
		prefix, _, _ := strings.Cut(key, ":") // "invoice:42" counts as "invoice"
		return prefix
	}))
	if err != nil {
		panic(err)
	}
	reg := prometheus.NewRegistry() // or prometheus.MustRegister(metrics)
	reg.MustRegister(metrics)
	locker := dlock.New(rdb, dlock.WithObserver(metrics))
	defer locker.Close()

	// In a program: http.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	srv := httptest.NewServer(promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	defer srv.Close()

	lock, err := locker.TryObtain(context.Background(), "invoice:42", time.Minute)
	if err != nil {
		panic(err)
	}
	defer lock.Release(context.Background())

	resp, err := srv.Client().Get(srv.URL)
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
