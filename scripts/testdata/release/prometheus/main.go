// Command prometheus registers dlock's collector, holds a lock and scrapes
// /metrics over HTTP, as a consumer of the prometheus module does.
package main

import (
	"context"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/redis/go-redis/v9"

	"github.com/dlock-go/dlock"
	dlockprom "github.com/dlock-go/dlock/prometheus"
)

func main() {
	if len(os.Args) != 2 {
		log.Fatal("usage: prometheus REDIS_ADDR")
	}
	if err := scrape(context.Background(), os.Args[1]); err != nil {
		log.Fatal(err)
	}
}

func scrape(ctx context.Context, addr string) error {
	rdb := redis.NewClient(&redis.Options{Addr: addr})
	defer rdb.Close()
	metrics, err := dlockprom.New()
	if err != nil {
		return err
	}
	reg := prometheus.NewRegistry()
	if err := reg.Register(metrics); err != nil {
		return err
	}
	srv := httptest.NewServer(promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	defer srv.Close()
	locker := dlock.New(rdb, dlock.WithObserver(metrics))
	defer locker.Close()

	lock, err := locker.TryObtain(ctx, "release-check:prometheus", time.Minute)
	if err != nil {
		return err
	}
	defer lock.Release(context.WithoutCancel(ctx))
	resp, err := srv.Client().Get(srv.URL + "/metrics")
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	page, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET /metrics: %s", resp.Status)
	}
	for line := range strings.Lines(string(page)) {
		if strings.HasPrefix(line, "dlock_locks_held{") && strings.HasSuffix(line, " 1\n") {
			fmt.Print("scraped ", line)
			return nil
		}
	}
	return fmt.Errorf("/metrics has no dlock_locks_held series at 1 while a lock is held:\n%s", page)
}
