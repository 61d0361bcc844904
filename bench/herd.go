package bench

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/dlock-go/dlock"
)

// HerdConfig sets up the flash sale of the herd row: Buyers goroutines,
// spread over Clients dlock Clients (each with connections of its own, as
// separate processes would have), each buy one item with Client.Do around a
// read-modify-write of the stock (GET, then SET), until Items are sold.
// A smaller sale on another key warms the Clients and the server up first,
// as a service that has run for a while is (scripts loaded, connections
// and the Clients' Pub/Sub connections open); only the second is measured.
type HerdConfig struct {
	Clients int
	Buyers  int
	Items   int
	Fair    bool // WithFair; else the default mode
	TTL     time.Duration
}

// HerdResult is one run of the flash sale.
type HerdResult struct {
	Scenario  string  `json:"scenario"` // "herd"
	Mode      string  `json:"mode"`     // "default" or "fair"
	Clients   int     `json:"clients"`
	Buyers    int     `json:"buyers"`
	Sold      int     `json:"sold"`
	Oversold  int     `json:"oversold"` // items sold beyond the stock: must be 0
	Seconds   float64 `json:"seconds"`
	PerSecond float64 `json:"purchases_per_s"`
	// ScriptsPerPurchase counts EVALSHA and EVAL calls (INFO commandstats)
	// per purchase: every attempt, release and wait-list upkeep.
	ScriptsPerPurchase float64 `json:"scripts_per_purchase"`
	Commands           string  `json:"commands"` // all commands per purchase
	P50WaitMs          float64 `json:"p50_wait_ms"`
	P99WaitMs          float64 `json:"p99_wait_ms"`
	MaxWaitMs          float64 `json:"max_wait_ms"`
	Errors             int     `json:"errors"`
	LastError          string  `json:"last_error,omitempty"`
}

// RunHerd runs the flash sale against the server at addr.
func RunHerd(ctx context.Context, addr string, cfg HerdConfig) (HerdResult, error) {
	if cfg.Clients < 1 || cfg.Buyers < 1 || cfg.Items < 1 || cfg.TTL <= 0 {
		return HerdResult{}, fmt.Errorf("bench: invalid HerdConfig %+v", cfg)
	}
	ctl := redis.NewClient(&redis.Options{Addr: addr})
	defer ctl.Close()
	rdbs := make([]*redis.Client, cfg.Clients)
	lockers := make([]*dlock.Client, cfg.Clients)
	for i := range rdbs {
		rdbs[i] = redis.NewClient(&redis.Options{Addr: addr, PoolSize: cfg.Buyers/cfg.Clients + 8})
		lockers[i] = dlock.New(rdbs[i])
	}
	defer func() {
		for i := range rdbs {
			lockers[i].Close()
			rdbs[i].Close()
		}
	}()
	var opts []dlock.DoOption
	if cfg.Fair {
		opts = append(opts, dlock.WithFair())
	}
	warm := HerdConfig{Clients: cfg.Clients, Buyers: 8 * cfg.Clients, Items: 8 * cfg.Clients, TTL: cfg.TTL}
	if _, _, _, _, err := sale(ctx, ctl, lockers, rdbs, "herd:warm", warm, opts); err != nil {
		return HerdResult{}, err
	}
	before, err := commandCalls(ctx, ctl)
	if err != nil {
		return HerdResult{}, err
	}
	start := time.Now()
	waits, sold, errs, lastErr, err := sale(ctx, ctl, lockers, rdbs, "herd", cfg, opts)
	if err != nil {
		return HerdResult{}, err
	}
	took := time.Since(start)
	after, err := commandCalls(ctx, ctl)
	if err != nil {
		return HerdResult{}, err
	}
	left, err := ctl.Get(ctx, "herd:stock").Int()
	if err != nil && !errors.Is(err, redis.Nil) {
		return HerdResult{}, err
	}
	delta, _ := callsDelta(before, after)
	mode := "default"
	if cfg.Fair {
		mode = "fair"
	}
	res := HerdResult{
		Scenario: "herd", Mode: mode, Clients: cfg.Clients, Buyers: cfg.Buyers,
		Sold: sold, Oversold: max(sold-cfg.Items, 0) + max(-left, 0),
		Seconds: took.Seconds(), PerSecond: float64(sold) / took.Seconds(),
		ScriptsPerPurchase: ratio(delta["evalsha"]+delta["eval"], max(sold, 1)),
		Commands:           perOp(delta, max(sold, 1)),
		P50WaitMs:          ms(quantile(waits, 0.50)),
		P99WaitMs:          ms(quantile(waits, 0.99)),
		MaxWaitMs:          ms(quantile(waits, 1)),
		Errors:             errs,
	}
	if lastErr != nil {
		res.LastError = lastErr.Error()
	}
	return res, nil
}

// sale runs one flash sale of cfg.Items on the keys prefix:stock and
// prefix:lock, and returns every buyer's wait, sorted, how many bought, how
// many failed, and the last error of a buyer.
func sale(ctx context.Context, ctl *redis.Client, lockers []*dlock.Client, rdbs []*redis.Client, prefix string, cfg HerdConfig, opts []dlock.DoOption) (waits []time.Duration, sold, errs int, lastErr, err error) {
	stock, lock := prefix+":stock", prefix+":lock"
	if err := ctl.Set(ctx, stock, cfg.Items, 0).Err(); err != nil {
		return nil, 0, 0, nil, err
	}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for b := range cfg.Buyers {
		locker, rdb := lockers[b%len(lockers)], rdbs[b%len(rdbs)]
		wg.Go(func() {
			wanted := time.Now()
			bought := false
			err := locker.Do(ctx, lock, cfg.TTL, func(ctx context.Context) error {
				n, err := rdb.Get(ctx, stock).Int()
				if err != nil || n <= 0 {
					return err
				}
				bought = true
				return rdb.Set(ctx, stock, strconv.Itoa(n-1), 0).Err()
			}, opts...)
			mu.Lock()
			defer mu.Unlock()
			waits = append(waits, time.Since(wanted))
			if bought && err == nil {
				sold++
			}
			if err != nil {
				errs++
				lastErr = err
			}
		})
	}
	wg.Wait()
	slices.Sort(waits)
	return waits, sold, errs, lastErr, nil
}

func quantile(sorted []time.Duration, q float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	return sorted[min(int(q*float64(len(sorted)-1)+0.5), len(sorted)-1)]
}
