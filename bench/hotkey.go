package bench

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
)

// HotKeyConfig sets up (c): Clients lockers, each with connections of its
// own, loop for Duration: obtain the same key (blocking), hold it for Hold,
// release it, and at once want it again.
type HotKeyConfig struct {
	Clients  int
	Duration time.Duration
	Hold     time.Duration
	TTL      time.Duration
	// Monitor, if positive, is the length of a second, separate run under
	// MONITOR, which counts requests and commands run inside scripts.
	Monitor time.Duration
}

// HotKeyResult is one row of (c). Waits run from the moment a client wants
// the lock to the moment it holds it, across any attempts that gave up.
type HotKeyResult struct {
	Scenario     string  `json:"scenario"` // "hotkey"
	Lib          string  `json:"lib"`
	Clients      int     `json:"clients"`
	Seconds      float64 `json:"seconds"`
	HoldMs       float64 `json:"hold_ms"`
	TTLMs        float64 `json:"ttl_ms"`
	Acquisitions int     `json:"acquisitions"`
	PerSecond    float64 `json:"acquisitions_per_s"`
	// SameClient is the share of acquisitions made by the client that made
	// the one before: it released, and won again. 1/Clients is what a fair
	// coin would give; 0 is a strict queue.
	SameClient   float64 `json:"same_client_share"`
	MinPerClient int     `json:"min_per_client"`
	MaxPerClient int     `json:"max_per_client"`
	MaxWaitMs    float64 `json:"max_wait_ms"` // also counts a wait still unfinished at the end
	MeanWaitMs   float64 `json:"mean_wait_ms"`
	// CommandsPerAcq is INFO commandstats' calls over the run, per
	// acquisition; it counts commands run inside scripts. Commands breaks
	// it down.
	CommandsPerAcq float64 `json:"commands_per_acq"`
	Commands       string  `json:"commands"`
	// RoundTripsPerAcq counts the writes the clients made on their
	// connections (WriteCounter), per acquisition.
	RoundTripsPerAcq float64 `json:"round_trips_per_acq"`
	// From the separate MONITOR run: requests clients sent, and commands
	// scripts ran, per acquisition.
	MonitorRequestsPerAcq float64 `json:"monitor_requests_per_acq,omitempty"`
	MonitorScriptedPerAcq float64 `json:"monitor_scripted_per_acq,omitempty"`
	// GaveUp counts blocking obtains that returned an error while the run
	// went on (redsync's ErrFailed after its tries); the client then called
	// again. LastError is the last such error.
	GaveUp    int    `json:"gave_up"`
	LastError string `json:"last_error,omitempty"`
	// Overlaps counts acquisitions while another client held the lock: it
	// must be 0.
	Overlaps int `json:"overlaps"`
}

// RunHotKey runs (c) for row against the server at addr.
func RunHotKey(ctx context.Context, addr string, row Row, cfg HotKeyConfig) (HotKeyResult, error) {
	if cfg.Clients < 1 || cfg.Duration <= 0 || cfg.Hold < 0 || cfg.TTL <= 0 || cfg.Monitor < 0 {
		return HotKeyResult{}, fmt.Errorf("bench: invalid HotKeyConfig %+v", cfg)
	}
	ctl := redis.NewClient(&redis.Options{Addr: addr})
	defer ctl.Close()
	key := "hot:" + row.Name
	before, err := commandCalls(ctx, ctl)
	if err != nil {
		return HotKeyResult{}, err
	}
	var writes WriteCounter
	env := Env{Nodes: []string{addr}, TTL: cfg.TTL, Dial: writes.Dial}
	run, err := compete(ctx, row, env, key, cfg, cfg.Duration)
	if err != nil {
		return HotKeyResult{}, err
	}
	after, err := commandCalls(ctx, ctl)
	if err != nil {
		return HotKeyResult{}, err
	}
	res := run.result(row.Name, cfg)
	delta, total := callsDelta(before, after)
	res.CommandsPerAcq = ratio(total, res.Acquisitions)
	res.Commands = perOp(delta, res.Acquisitions)
	res.RoundTripsPerAcq = ratio(writes.Writes(), res.Acquisitions)
	if cfg.Monitor > 0 {
		if err := monitorHotKey(ctx, ctl, addr, row, key, cfg, &res); err != nil {
			return res, err
		}
	}
	return res, nil
}

// monitorHotKey repeats the run for cfg.Monitor under MONITOR.
func monitorHotKey(ctx context.Context, ctl *redis.Client, addr string, row Row, key string, cfg HotKeyConfig, res *HotKeyResult) error {
	m, err := StartMonitor(ctx, addr)
	if err != nil {
		return err
	}
	run, err := compete(ctx, row, Env{Nodes: []string{addr}, TTL: cfg.TTL}, key, cfg, cfg.Monitor)
	requests, scripted, stopErr := m.Stop(ctx, ctl)
	if err := errors.Join(err, stopErr); err != nil {
		return err
	}
	n := len(run.order)
	res.MonitorRequestsPerAcq = ratio(requests, n)
	res.MonitorScriptedPerAcq = ratio(scripted, n)
	return nil
}

// contest is what the clients of one run did.
type contest struct {
	mu       sync.Mutex
	order    []int           // the client of each acquisition, in order
	waits    []time.Duration // the wait of each acquisition
	maxOpen  time.Duration   // the longest wait still unfinished at the end
	gaveUp   int
	lastErr  error
	holders  atomic.Int32
	overlaps atomic.Int64
}

// compete makes cfg.Clients lockers, lets them compete for key for d, and
// closes them.
func compete(ctx context.Context, row Row, env Env, key string, cfg HotKeyConfig, d time.Duration) (*contest, error) {
	lockers := make([]Locker, 0, cfg.Clients)
	defer func() {
		for _, l := range lockers {
			_ = l.Close()
		}
	}()
	for range cfg.Clients {
		l, err := row.New(env)
		if err != nil {
			return nil, err
		}
		lockers = append(lockers, l)
	}
	c := &contest{order: make([]int, 0, 1<<14), waits: make([]time.Duration, 0, 1<<14)}
	runCtx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	var wg sync.WaitGroup
	for id, l := range lockers {
		wg.Go(func() { c.client(runCtx, id, l, key, cfg.Hold) })
	}
	wg.Wait()
	return c, ctx.Err()
}

// client is one competitor's loop, until ctx ends.
func (c *contest) client(ctx context.Context, id int, l Locker, key string, hold time.Duration) {
	for ctx.Err() == nil {
		wanted := time.Now()
		h, err := l.Obtain(ctx, key)
		for err != nil && ctx.Err() == nil {
			c.noteGaveUp(err)
			h, err = l.Obtain(ctx, key)
		}
		if err != nil {
			c.noteOpen(time.Since(wanted))
			return
		}
		if c.holders.Add(1) > 1 {
			c.overlaps.Add(1)
		}
		c.noteAcquired(id, time.Since(wanted))
		time.Sleep(hold)
		c.holders.Add(-1)
		if err := h.Release(context.WithoutCancel(ctx)); err != nil && ctx.Err() == nil {
			c.noteGaveUp(fmt.Errorf("release: %w", err))
		}
	}
}

func (c *contest) noteAcquired(id int, wait time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.order = append(c.order, id)
	c.waits = append(c.waits, wait)
}

func (c *contest) noteGaveUp(err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.gaveUp++
	c.lastErr = err
}

func (c *contest) noteOpen(wait time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.maxOpen = max(c.maxOpen, wait)
}

// result summarises the run.
func (c *contest) result(lib string, cfg HotKeyConfig) HotKeyResult {
	res := HotKeyResult{
		Scenario: "hotkey", Lib: lib, Clients: cfg.Clients,
		Seconds: cfg.Duration.Seconds(), HoldMs: ms(cfg.Hold), TTLMs: ms(cfg.TTL),
		Acquisitions: len(c.order), GaveUp: c.gaveUp, Overlaps: int(c.overlaps.Load()),
	}
	res.PerSecond = float64(res.Acquisitions) / cfg.Duration.Seconds()
	if c.lastErr != nil {
		res.LastError = c.lastErr.Error()
	}
	perClient := make([]int, cfg.Clients)
	same := 0
	for i, id := range c.order {
		perClient[id]++
		if i > 0 && c.order[i-1] == id {
			same++
		}
	}
	res.MinPerClient, res.MaxPerClient = slices.Min(perClient), slices.Max(perClient)
	if n := len(c.order); n > 1 {
		res.SameClient = float64(same) / float64(n-1)
	}
	var sum time.Duration
	for _, w := range c.waits {
		sum += w
	}
	res.MaxWaitMs = ms(max(slices.Max(append(c.waits, 0)), c.maxOpen))
	res.MeanWaitMs = ratio(int64(sum), len(c.waits)) / 1e6
	return res
}

// ratio returns n/d, or 0 when d is 0.
func ratio(n int64, d int) float64 {
	if d == 0 {
		return 0
	}
	return float64(n) / float64(d)
}

// ms returns d in milliseconds.
func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
