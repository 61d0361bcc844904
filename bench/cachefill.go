package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"runtime"
	"runtime/metrics"
	"runtime/trace"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
	"golang.org/x/sync/singleflight"

	"github.com/dlock-go/dlock"
	"github.com/dlock-go/dlock/cachefill"
)

// StampedeConfig sets up a cache stampede: Goroutines goroutines
// spread over Processes simulated processes, each with its own go-redis
// client and its own cache, Get a cold key at once; loading it takes Load.
// Each of Rounds rounds uses a key of its own, after one warm-up round.
// With OwnContexts, each Get has a context of its own, as each request of
// a server has; otherwise they all share the run's. PerRound, if not nil,
// gets a line for each round (see measureStampedes).
type StampedeConfig struct {
	Goroutines, Processes, Rounds int
	Load                          time.Duration
	OwnContexts                   bool
	PerRound                      io.Writer
}

// StampedeResult is one approach's row, over every round.
type StampedeResult struct {
	Approach string  `json:"approach"`
	Rounds   int     `json:"rounds"`
	Gets     int     `json:"gets"`
	Loads    float64 `json:"loads_per_round"`
	P50Ms    float64 `json:"p50_ms"` // one Get, from the start of the stampede
	P99Ms    float64 `json:"p99_ms"`
	MaxMs    float64 `json:"max_ms"`
	// The p99 of each round's Gets, the median over the rounds: the tail
	// of a typical stampede, where P99Ms is that of the worst few rounds.
	RoundP99Ms float64 `json:"round_p99_median_ms"`
	// The same for each Get from its own call: its latency as its caller
	// sees it, without the wait for its goroutine to run after the start.
	CallP50Ms      float64 `json:"call_p50_ms"`
	CallP99Ms      float64 `json:"call_p99_ms"`
	CallRoundP99Ms float64 `json:"call_round_p99_median_ms"`
	// When a round's first load started, from the start of the round, and
	// when its p99 Get returned, from the end of its last load: the
	// medians over the rounds. They split the p99 into what comes before
	// the load and what comes after it.
	LoadStartMs    float64 `json:"load_start_median_ms"`
	AfterLoadP99Ms float64 `json:"after_load_p99_median_ms"`
	Requests       float64 `json:"requests_per_get"` // round trips the clients sent
	Commands       float64 `json:"commands_per_get"` // what Redis ran, commands inside scripts included
	// Commands per process and stampede, and per waiting process: the
	// commands of a round less those of a round of one process alone (the
	// loader), over the other processes.
	CommandsPerProcess float64 `json:"commands_per_process"`
	CommandsPerWaiter  float64 `json:"commands_per_waiting_process"`
	// What the whole process allocated per stampede (every process's
	// cache and client, and the harness, which is the same for every
	// row), and how many garbage collections ran per ten stampedes: a
	// collection that runs during a stampede holds up its Gets.
	AllocKB  float64 `json:"allocated_kb_per_stampede"`
	GCsPer10 float64 `json:"gcs_per_10_stampedes"`
	Errors   int     `json:"errors"`
}

// StampedeRow is one approach: New makes the cache of one process on its
// client.
type StampedeRow struct {
	Name string
	Note string
	New  func(rdb *redis.Client) stampedeCache
}

// stampedeCache is one process's cache of one approach.
type stampedeCache interface {
	get(ctx context.Context, key string, load func(context.Context) ([]byte, error)) ([]byte, error)
	close()
}

// StampedeRows are singleflight alone, a lock with polling waiters (as
// rockscache's), cachefill, and the floor: one load in memory, no Redis.
func StampedeRows() []StampedeRow {
	return []StampedeRow{
		{"singleflight", "`golang.org/x/sync/singleflight` per process around `GET`, then load and `SET`: one load per process", newSingleflightCache},
		{"lock-poll-100ms", "singleflight per process; one script reads the value or takes a `SET NX PX` lock; the process that took it loads and stores, the others run the script again every 100 ms (rockscache's default `LockSleep`)", newPollingCache},
		{"cachefill", "`cachefill.Get` at its defaults", newCachefillCache},
		{"floor-redis", "the least a design across processes can do through Redis, without cachefill's safeguards: singleflight per process; one script reads the value or claims the load (`GET`, and on a miss `XREVRANGE` and `SET NX`); the claimer loads and stores in one script (`SET`, `XADD` with the value); the others block in one `XREAD` until that message. No lock, no renewal, no timeouts, no context of their own", newRedisFloorCache},
		{"floor", "no Redis: the processes share one in-memory `singleflight.Group`, so one load runs and every Get is woken when it ends: what one load and waking a thousand goroutines at once cost on this machine, the least any approach can take", newFloorCache(new(singleflight.Group))},
	}
}

// RunStampede runs cfg.Rounds stampedes of row on the Redis at addr, and
// then as many with one process alone (its loader), to tell what a waiting
// process costs from what the loader does.
func RunStampede(ctx context.Context, addr string, row StampedeRow, cfg StampedeConfig) (StampedeResult, error) {
	res := StampedeResult{Approach: row.Name, Rounds: cfg.Rounds}
	writes := make([]*WriteCounter, cfg.Processes)
	caches := make([]stampedeCache, cfg.Processes)
	for i := range caches {
		writes[i] = new(WriteCounter)
		rdb := redis.NewClient(&redis.Options{Addr: addr, Dialer: writes[i].Dial})
		defer rdb.Close()
		caches[i] = row.New(rdb)
		defer caches[i].close()
	}
	admin := redis.NewClient(&redis.Options{Addr: addr})
	defer admin.Close()
	prefix := fmt.Sprintf("bench-stampede:%s:%d:", row.Name, time.Now().UnixNano())
	if _, _, _, _, err := stampede(ctx, caches, prefix+"warm-up", cfg); err != nil {
		return res, err
	}
	all, err := measureStampedes(ctx, admin, caches, writes, prefix+"round-", cfg)
	if err != nil {
		return res, err
	}
	solo := cfg
	solo.Processes, solo.Goroutines = 1, max(cfg.Goroutines/cfg.Processes, 1)
	alone, err := measureStampedes(ctx, admin, caches[:1], writes[:1], prefix+"alone-", solo)
	if err != nil {
		return res, err
	}
	res.Errors = all.errors + alone.errors
	res.Gets = len(all.took)
	res.Loads = float64(all.loads) / float64(cfg.Rounds)
	res.P50Ms = ms(Percentile(all.took, 50))
	res.P99Ms = ms(Percentile(all.took, 99))
	res.MaxMs = ms(Percentile(all.took, 100))
	res.RoundP99Ms = ms(Percentile(all.roundP99, 50))
	res.CallP50Ms = ms(Percentile(all.call, 50))
	res.CallP99Ms = ms(Percentile(all.call, 99))
	res.CallRoundP99Ms = ms(Percentile(all.callRoundP99, 50))
	res.LoadStartMs = ms(Percentile(all.loadStart, 50))
	res.AfterLoadP99Ms = ms(Percentile(all.afterLoadP99, 50))
	res.AllocKB = float64(all.allocated) / 1024 / float64(cfg.Rounds)
	res.GCsPer10 = float64(all.gcs) * 10 / float64(cfg.Rounds)
	res.Requests = float64(all.requests) / float64(res.Gets)
	res.Commands = float64(all.commands) / float64(res.Gets)
	perRound := float64(all.commands) / float64(cfg.Rounds)
	res.CommandsPerProcess = perRound / float64(cfg.Processes)
	if cfg.Processes > 1 {
		res.CommandsPerWaiter = (perRound - float64(alone.commands)/float64(cfg.Rounds)) / float64(cfg.Processes-1)
	}
	return res, nil
}

// stampedes is what cfg.Rounds stampedes did.
type stampedes struct {
	took, call              []time.Duration // from the start; from the call
	roundP99, callRoundP99  []time.Duration
	loadStart, afterLoadP99 []time.Duration // of each round
	loads, errors           int
	requests, commands      int64  // sent by the clients; run by Redis
	allocated               uint64 // bytes, by the whole process
	gcs                     uint32 // garbage collections that ran
}

// measureStampedes runs cfg.Rounds stampedes of keys named prefix and the
// round over caches. For each it writes to cfg.PerRound, if set, when its
// load started, when its p99 Get returned after the load, and how many
// garbage collections ran from just before its goroutines were made to
// its end.
func measureStampedes(ctx context.Context, admin *redis.Client, caches []stampedeCache, writes []*WriteCounter, prefix string, cfg StampedeConfig) (stampedes, error) {
	var s stampedes
	sent := func() (n int64) {
		for _, w := range writes {
			n += w.Writes()
		}
		return n
	}
	before, beforeErr := readServerStats(ctx, admin)
	sentBefore := sent()
	var mem runtime.MemStats
	runtime.ReadMemStats(&mem)
	allocBefore, gcBefore := mem.TotalAlloc, mem.NumGC
	for round := range cfg.Rounds {
		gcs := gcCount()
		d, call, n, span, err := stampede(ctx, caches, fmt.Sprintf("%s%d", prefix, round), cfg)
		if err != nil {
			s.errors++
		}
		if cfg.PerRound != nil {
			fmt.Fprintf(cfg.PerRound, "%s%d: load starts %.2f ms, p99 after load %.2f ms, garbage collections %d\n",
				prefix, round, ms(span.start), ms(Percentile(d, 99)-span.end), gcCount()-gcs)
		}
		s.loadStart = append(s.loadStart, span.start)
		s.afterLoadP99 = append(s.afterLoadP99, Percentile(d, 99)-span.end)
		s.took = append(s.took, d...)
		s.call = append(s.call, call...)
		s.roundP99 = append(s.roundP99, Percentile(d, 99))
		s.callRoundP99 = append(s.callRoundP99, Percentile(call, 99))
		s.loads += n
	}
	runtime.ReadMemStats(&mem)
	s.allocated, s.gcs = mem.TotalAlloc-allocBefore, mem.NumGC-gcBefore
	s.requests = sent() - sentBefore
	after, afterErr := readServerStats(ctx, admin)
	s.commands = after.commands - before.commands - 1 // the INFO of before
	return s, errors.Join(beforeErr, afterErr)
}

// gcCount returns how many garbage collections ran so far, without
// stopping the world as runtime.ReadMemStats does.
func gcCount() uint64 {
	sample := []metrics.Sample{{Name: "/gc/cycles/total:gc-cycles"}}
	metrics.Read(sample)
	return sample[0].Value.Uint64()
}

// loadSpan is when a round's loads ran, from the start of the round: the
// first start and the last end.
type loadSpan struct{ start, end time.Duration }

// stampede runs one round: every goroutine Gets key at once. It returns
// the time from the start of the round to each Get's return, the time from
// each Get's call to its return, how many loads ran, and when.
func stampede(ctx context.Context, caches []stampedeCache, key string, cfg StampedeConfig) (took, call []time.Duration, loads int, span loadSpan, err error) {
	var mu sync.Mutex
	var begin time.Time // written before start closes
	load := func(ctx context.Context) ([]byte, error) {
		started := time.Since(begin)
		mu.Lock()
		if loads++; loads == 1 || started < span.start {
			span.start = started
		}
		mu.Unlock()
		t := time.NewTimer(cfg.Load)
		defer t.Stop()
		select {
		case <-t.C:
			ended := time.Since(begin)
			trace.Log(ctx, "stampede", "load end")
			mu.Lock()
			span.end = max(span.end, ended)
			mu.Unlock()
			return []byte("the value of " + key), nil
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	took = make([]time.Duration, cfg.Goroutines)
	call = make([]time.Duration, cfg.Goroutines)
	errs := make([]error, cfg.Goroutines)
	start := make(chan struct{})
	var ready, wg sync.WaitGroup
	for i := range cfg.Goroutines {
		ready.Add(1)
		wg.Go(func() {
			ctx := ctx // made before the start, so that its cost is not the Get's
			if cfg.OwnContexts {
				var cancel context.CancelFunc
				ctx, cancel = context.WithCancel(ctx)
				defer cancel()
			}
			ready.Done()
			<-start
			called := time.Now()
			v, err := caches[i%len(caches)].get(ctx, key, load)
			// From the start too, not only from when this goroutine ran:
			// on two cores, the last of 1,000 goroutines runs milliseconds
			// later.
			took[i] = time.Since(begin)
			call[i] = time.Since(called)
			if err == nil && string(v) != "the value of "+key {
				err = fmt.Errorf("got %q", v)
			}
			errs[i] = err
		})
	}
	ready.Wait()
	trace.Log(ctx, "stampede", "start "+key)
	begin = time.Now()
	close(start)
	wg.Wait()
	mu.Lock() // a load dropped by its Get may still be running
	defer mu.Unlock()
	return took, call, loads, span, errors.Join(errs...)
}

// WriteStampedeTable writes the results as a markdown table.
func WriteStampedeTable(w io.Writer, cfg StampedeConfig, results []StampedeResult) {
	fmt.Fprintf(w, "%d goroutines over %d processes (each a go-redis client and a cache of its own) Get one cold key "+
		"at once; the load takes %v; %s. %d rounds of a new key each, after a warm-up round. Times run from the start "+
		"of the round to each Get's return, then from each Get's call to its return (its latency); the median round's "+
		"first load starts after the start of the round, and its p99 Get returns after the end of its last load. Allocations "+
		"and garbage collections are the whole process's. Commands are "+
		"Redis's, inside scripts included: per Get, per process and round, and per waiting process (a round's less "+
		"a round of one process alone, over the %d others).\n\n",
		cfg.Goroutines, cfg.Processes, cfg.Load, contexts(cfg), cfg.Rounds, cfg.Processes-1)
	fmt.Fprintf(w, "| row | loads per stampede | p50 | p99 | max | median round's p99 | Get p50 | Get p99 | median round's Get p99 | load starts | p99 after load | KB allocated per stampede | GCs per 10 stampedes | requests per Get | Redis commands per Get | per process | per waiting process |\n")
	fmt.Fprintf(w, "|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|\n")
	for _, r := range results {
		fmt.Fprintf(w, "| %s | %.1f | %.1f ms | %.1f ms | %.1f ms | %.1f ms | %.1f ms | %.1f ms | %.1f ms | %.2f ms | %.2f ms | %.0f | %.1f | %.3f | %.3f | %.1f | %.1f |\n",
			r.Approach, r.Loads, r.P50Ms, r.P99Ms, r.MaxMs, r.RoundP99Ms, r.CallP50Ms, r.CallP99Ms, r.CallRoundP99Ms,
			r.LoadStartMs, r.AfterLoadP99Ms, r.AllocKB, r.GCsPer10,
			r.Requests, r.Commands, r.CommandsPerProcess, r.CommandsPerWaiter)
	}
	fmt.Fprintln(w)
	for _, row := range StampedeRows() {
		fmt.Fprintf(w, "- %s: %s\n", row.Name, row.Note)
	}
}

// contexts says what contexts the Gets of cfg have.
func contexts(cfg StampedeConfig) string {
	if cfg.OwnContexts {
		return "each Get has a context of its own"
	}
	return "the Gets share one context"
}

// singleflightCache dedupes within its process only.
type singleflightCache struct {
	rdb   *redis.Client
	group singleflight.Group
}

func newSingleflightCache(rdb *redis.Client) stampedeCache { return &singleflightCache{rdb: rdb} }

func (c *singleflightCache) get(ctx context.Context, key string, load func(context.Context) ([]byte, error)) ([]byte, error) {
	v, err, _ := c.group.Do(key, func() (any, error) {
		v, err := c.rdb.Get(ctx, key).Bytes()
		if !errors.Is(err, redis.Nil) {
			return v, err
		}
		if v, err = load(ctx); err != nil {
			return nil, err
		}
		return v, c.rdb.Set(ctx, key, v, time.Minute).Err()
	})
	b, _ := v.([]byte)
	return b, err
}

func (c *singleflightCache) close() {}

// pollingCache reads the value or takes the lock in one script, as
// rockscache does, loads if it took the lock, and otherwise polls.
type pollingCache struct {
	singleflightCache
	interval time.Duration
}

func newPollingCache(rdb *redis.Client) stampedeCache {
	return &pollingCache{singleflightCache: singleflightCache{rdb: rdb}, interval: 100 * time.Millisecond}
}

// pollScript returns {1, value} for a value, {2} when it took the lock for
// the caller, {0} when another caller holds it.
var pollScript = redis.NewScript(`
local v = redis.call('GET', KEYS[1])
if v then return {1, v} end
if redis.call('SET', KEYS[2], ARGV[1], 'NX', 'PX', ARGV[2]) then return {2} end
return {0}`)

// Codes of pollScript.
const (
	pollWait   = 0
	pollValue  = 1
	pollLocked = 2
)

func (c *pollingCache) get(ctx context.Context, key string, load func(context.Context) ([]byte, error)) ([]byte, error) {
	v, err, _ := c.group.Do(key, func() (any, error) {
		for {
			r, err := pollScript.Run(ctx, c.rdb, []string{key, key + ":lock"}, "owner", 3000).Slice()
			if err != nil {
				return nil, err
			}
			switch r[0].(int64) {
			case pollValue:
				return []byte(r[1].(string)), nil
			case pollLocked:
				v, err := load(ctx)
				if err == nil {
					err = c.rdb.Set(ctx, key, v, time.Minute).Err()
				}
				c.rdb.Del(ctx, key+":lock")
				return v, err
			}
			t := time.NewTimer(c.interval)
			select {
			case <-t.C:
			case <-ctx.Done():
				t.Stop()
				return nil, ctx.Err()
			}
		}
	})
	b, _ := v.([]byte)
	return b, err
}

// cachefillCache is a cachefill.Cache at its defaults, on a dlock Client
// of its own.
type cachefillCache struct {
	locker *dlock.Client
	cache  *cachefill.Cache
}

func newCachefillCache(rdb *redis.Client) stampedeCache {
	locker := dlock.New(rdb)
	cache, err := cachefill.New(locker)
	if err != nil {
		panic(err) // a Client on a non-nil client, no option
	}
	return cachefillCache{locker, cache}
}

func (c cachefillCache) get(ctx context.Context, key string, load func(context.Context) ([]byte, error)) ([]byte, error) {
	return c.cache.Get(ctx, key, time.Minute, load)
}

func (c cachefillCache) close() {
	_ = c.cache.Close()
	_ = c.locker.Close()
}

// redisFloorCache runs the least protocol any cache that fills a key once
// across processes through Redis needs: one round trip before the load
// (read or claim), one after it (store, which hands the value to the
// waiting processes), and a blocked read for each waiting process. It has
// none of cachefill's safeguards (a loader that dies leaves its waiters
// blocked), and is a measure, not a cache to use.
type redisFloorCache struct{ singleflightCache }

func newRedisFloorCache(rdb *redis.Client) stampedeCache {
	return &redisFloorCache{singleflightCache{rdb: rdb}}
}

// redisFloorRead returns {1, value} for a value, {0, last, claimed}
// otherwise: claimed is 1 for the first caller to miss; last is the ID of
// the stream's last message, after which the fill's message comes.
var redisFloorRead = redis.NewScript(`
local v = redis.call('GET', KEYS[1])
if v then return {1, v} end
local last = '0-0'
local m = redis.call('XREVRANGE', KEYS[2], '+', '-', 'COUNT', 1)
if m[1] then last = m[1][1] end
if redis.call('SET', KEYS[3], '1', 'NX', 'PX', 30000) then return {0, last, 1} end
return {0, last, 0}`)

// redisFloorStore stores the value and adds it to the stream.
var redisFloorStore = redis.NewScript(`
redis.call('SET', KEYS[1], ARGV[1], 'PX', 60000)
redis.call('XADD', KEYS[2], 'MAXLEN', 1, '*', 'v', ARGV[1])
redis.call('PEXPIRE', KEYS[2], 30000)
return 1`)

func (c *redisFloorCache) get(ctx context.Context, key string, load func(context.Context) ([]byte, error)) ([]byte, error) {
	v, err, _ := c.group.Do(key, func() (any, error) {
		keys := []string{"{" + key + "}", "{" + key + "}:filled", "{" + key + "}:claim"}
		r, err := redisFloorRead.Run(ctx, c.rdb, keys).Slice()
		if err != nil {
			return nil, err
		}
		if len(r) < 2 {
			return nil, fmt.Errorf("unexpected reply %v", r)
		}
		code, _ := r[0].(int64)
		value, _ := r[1].(string)
		switch {
		case code == 1:
			return []byte(value), nil
		case len(r) == 3 && r[2] == int64(1):
			v, err := load(ctx)
			if err != nil {
				return nil, err
			}
			return v, redisFloorStore.Run(ctx, c.rdb, keys[:2], v).Err()
		}
		// A bounded wait: the loader's message comes within the load time.
		s, err := c.rdb.XRead(ctx, &redis.XReadArgs{Streams: []string{keys[1], value}, Count: 1, Block: 10 * time.Second}).Result()
		if err != nil {
			return nil, err
		}
		if len(s) != 1 || len(s[0].Messages) != 1 {
			return nil, fmt.Errorf("unexpected reply %v", s)
		}
		value, _ = s[0].Messages[0].Values["v"].(string)
		return []byte(value), nil
	})
	b, _ := v.([]byte)
	return b, err
}

// floorCache is one singleflight.Group shared by every process, with no
// Redis: the floor of one load whose end wakes every Get at once.
type floorCache struct{ group *singleflight.Group }

// newFloorCache returns the New of the floor row: every process's cache
// shares group.
func newFloorCache(group *singleflight.Group) func(*redis.Client) stampedeCache {
	return func(*redis.Client) stampedeCache { return floorCache{group} }
}

func (c floorCache) get(ctx context.Context, key string, load func(context.Context) ([]byte, error)) ([]byte, error) {
	v, err, _ := c.group.Do(key, func() (any, error) { return load(ctx) })
	b, _ := v.([]byte)
	return b, err
}

func (floorCache) close() {}
