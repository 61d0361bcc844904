package bench

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"strconv"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// RenewConfig sets up (d): one Locker obtains Locks keys with ttl TTL and
// keeps them for Periods times the ttl, renewing them.
type RenewConfig struct {
	Locks   int
	TTL     time.Duration
	Periods int
	// Workers is how many goroutines obtain and release the locks.
	Workers int
}

// RenewResult is one row of (d). The counters cover the hold only, from
// the moment the last lock was obtained to Periods ttls later.
type RenewResult struct {
	Scenario      string  `json:"scenario"` // "renew"
	Lib           string  `json:"lib"`
	Locks         int     `json:"locks"`
	TTLSeconds    float64 `json:"ttl_s"`
	HoldSeconds   float64 `json:"hold_s"`
	ObtainSeconds float64 `json:"obtain_s"` // to obtain all the locks, before the hold
	// ClientCPU is this process's user+system CPU time during the hold
	// (getrusage), and ClientCPUPercent the same as a share of one core.
	ClientCPUSeconds float64 `json:"client_cpu_s"`
	ClientCPUPercent float64 `json:"client_cpu_pct"`
	ServerCPUSeconds float64 `json:"server_cpu_s"` // INFO used_cpu_user+sys
	// CommandsPerSecond is INFO total_commands_processed over the hold:
	// it counts commands run inside scripts too. RoundTripsPerSecond
	// counts the client's writes on its connections.
	CommandsPerSecond   float64 `json:"commands_per_s"`
	RoundTripsPerSecond float64 `json:"round_trips_per_s"`
	Goroutines          int     `json:"goroutines"` // in the process, in the middle of the hold
	// At the end of the hold: how many locks the holder still thinks it
	// has, and how many Redis still holds (enough of their keys exist).
	HeldByLibrary int `json:"held_by_library"`
	HeldInRedis   int `json:"held_in_redis"`
}

// RunRenew runs (d) for row against the server at addr.
func RunRenew(ctx context.Context, addr string, row Row, cfg RenewConfig) (res RenewResult, err error) {
	if cfg.Locks < 1 || cfg.Workers < 1 || cfg.Periods < 1 || cfg.TTL <= 0 {
		return res, fmt.Errorf("bench: invalid RenewConfig %+v", cfg)
	}
	ctl := redis.NewClient(&redis.Options{Addr: addr})
	defer ctl.Close()
	var writes WriteCounter
	locker, err := row.New(Env{Nodes: []string{addr}, TTL: cfg.TTL, Dial: writes.Dial})
	if err != nil {
		return res, err
	}
	defer func() { err = errors.Join(err, locker.Close()) }()

	res = RenewResult{Scenario: "renew", Lib: row.Name, Locks: cfg.Locks, TTLSeconds: cfg.TTL.Seconds()}
	keys := make([]string, cfg.Locks)
	for i := range keys {
		keys[i] = "renew:" + row.Name + ":" + strconv.Itoa(i)
	}
	// rueidislock's locks live as long as the context they were obtained
	// with, so it must outlast the hold.
	holdCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	defer cancel()
	start := time.Now()
	held, err := obtainAll(holdCtx, locker, keys, cfg.Workers)
	defer func() { err = errors.Join(err, releaseAll(held, cfg.Workers)) }()
	if err != nil {
		return res, err
	}
	res.ObtainSeconds = time.Since(start).Seconds()
	if err := hold(ctx, ctl, &writes, cfg, &res); err != nil {
		return res, err
	}
	res.HeldByLibrary = countHeld(held)
	res.HeldInRedis, err = countInRedis(ctx, ctl, row, keys)
	return res, err
}

// hold waits Periods ttls and measures the client, the server and the
// traffic between them meanwhile.
func hold(ctx context.Context, ctl *redis.Client, writes *WriteCounter, cfg RenewConfig, res *RenewResult) error {
	before, err := readServerStats(ctx, ctl)
	if err != nil {
		return err
	}
	writes0, cpu0, t0 := writes.Writes(), processCPU(), time.Now()
	d := time.Duration(cfg.Periods) * cfg.TTL
	select {
	case <-time.After(d / 2):
	case <-ctx.Done():
		return ctx.Err()
	}
	res.Goroutines = runtime.NumGoroutine()
	select {
	case <-time.After(d - d/2):
	case <-ctx.Done():
		return ctx.Err()
	}
	cpu, elapsed, sent := processCPU()-cpu0, time.Since(t0), writes.Writes()-writes0
	after, err := readServerStats(ctx, ctl)
	if err != nil {
		return err
	}
	res.HoldSeconds = elapsed.Seconds()
	res.ClientCPUSeconds = cpu.Seconds()
	res.ClientCPUPercent = 100 * cpu.Seconds() / elapsed.Seconds()
	res.ServerCPUSeconds = after.cpu - before.cpu
	res.CommandsPerSecond = float64(after.commands-before.commands-1) / elapsed.Seconds() // less our INFO
	res.RoundTripsPerSecond = float64(sent) / elapsed.Seconds()
	return nil
}

// obtainAll obtains every key with workers goroutines. On error it returns
// what it obtained, for the caller to release.
func obtainAll(ctx context.Context, l Locker, keys []string, workers int) ([]Held, error) {
	held := make([]Held, len(keys))
	errs := make([]error, len(keys))
	parallel(len(keys), workers, func(i int) {
		held[i], errs[i] = l.Obtain(ctx, keys[i])
	})
	obtained := held[:0]
	for _, h := range held {
		if h != nil {
			obtained = append(obtained, h)
		}
	}
	return obtained, errors.Join(errs...)
}

// releaseAll releases every lock with workers goroutines.
func releaseAll(held []Held, workers int) error {
	errs := make([]error, len(held))
	parallel(len(held), workers, func(i int) {
		errs[i] = held[i].Release(context.Background())
	})
	return errors.Join(errs...)
}

// parallel calls f(0) ... f(n-1) on workers goroutines.
func parallel(n, workers int, f func(i int)) {
	next := make(chan int)
	var wg sync.WaitGroup
	for range min(workers, n) {
		wg.Go(func() {
			for i := range next {
				f(i)
			}
		})
	}
	for i := range n {
		next <- i
	}
	close(next)
	wg.Wait()
}

// countHeld counts the locks that their holder does not know to be lost.
func countHeld(held []Held) int {
	n := 0
	for _, h := range held {
		if r, ok := h.(Renewed); !ok || !r.Lost() {
			n++
		}
	}
	return n
}

// countInRedis counts the keys whose lock Redis still holds: enough of its
// Redis keys exist.
func countInRedis(ctx context.Context, ctl *redis.Client, row Row, keys []string) (int, error) {
	pipe := ctl.Pipeline()
	cmds := make([][]*redis.IntCmd, len(keys))
	for i, key := range keys {
		names, _ := row.keysOf(key)
		for _, name := range names {
			cmds[i] = append(cmds[i], pipe.Exists(ctx, name))
		}
	}
	if _, err := pipe.Exec(ctx); err != nil {
		return 0, err
	}
	n := 0
	for i, key := range keys {
		_, quorum := row.keysOf(key)
		present := 0
		for _, cmd := range cmds[i] {
			present += int(cmd.Val())
		}
		if present >= quorum {
			n++
		}
	}
	return n, nil
}
