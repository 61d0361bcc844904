package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
)

// SaleConfig sets up a flash sale: Items units,
// Buyers buyers who want one each, served by Goroutines goroutines spread
// over Clients go-redis clients (as several service instances would be),
// Rounds sales one after the other, each on a key of its own.
type SaleConfig struct {
	Items, Buyers, Goroutines, Clients, Rounds int
	// MaxRetries bounds the retries of one buyer where an approach retries
	// (WATCH): a buyer past it gives up (a plain WATCH loop retries for ever).
	MaxRetries int
}

// SaleResult is one approach's row, over every round.
type SaleResult struct {
	Approach string  `json:"approach"`
	Rounds   int     `json:"rounds"`
	Items    int     `json:"items"` // per round
	Buyers   int     `json:"buyers"`
	Sold     int     `json:"sold"`     // purchases the buyers were told succeeded, all rounds
	Oversold int     `json:"oversold"` // of those, past the stock
	Left     int     `json:"left"`     // units the buyers were told were sold out but left in Redis
	Retries  int     `json:"retries"`  // WATCH conflicts, DECR compensations
	GaveUp   int     `json:"gave_up"`  // buyers past MaxRetries
	Seconds  float64 `json:"seconds"`  // the rounds' time from first buyer to last
	PerSec   float64 `json:"sales_per_s"`
	P50Us    float64 `json:"p50_us"` // one purchase that succeeded, first try to answer
	P99Us    float64 `json:"p99_us"`
	// The CPU time the rounds cost per buyer, in µs: this process's (the
	// clients', getrusage) and redis-server's (INFO cpu), from the first
	// buyer to the last.
	ClientCPUUs float64 `json:"client_cpu_us_per_buyer"`
	ServerCPUUs float64 `json:"server_cpu_us_per_buyer"`
}

// A saleApproach sells one unit to a buyer, or says it is sold out.
type saleApproach interface {
	// stock sets up a round's stock of items units under key.
	stock(ctx context.Context, key string, items int) error
	// buy tries to buy one unit of key through client c (0 to Clients-1)
	// for buyer; it reports whether it bought one, and how often it retried.
	buy(ctx context.Context, c int, key string, buyer int) (bought bool, retries int, err error)
	// left returns the units left in key after the round.
	left(ctx context.Context, key string) (int, error)
	close() error
}

// SaleRow is one approach of the sale.
type SaleRow struct {
	Name string
	Note string
	New  func(clients []*redis.Client, cfg SaleConfig) saleApproach
}

// SaleRows are the usual approaches to a sale, then package stock's.
func SaleRows() []SaleRow {
	return []SaleRow{
		{"naive", "`GET`, then `SET` one less if positive, no lock", newNaiveSale},
		{"dlock-lock", "dlock `Obtain` (default mode, blocking) around the `GET`/`SET`, then `Release`", newLockedSale},
		{"watch", "go-redis `Watch`: `GET`, then `MULTI`/`SET`/`EXEC`, retried on `TxFailedErr`", newWatchSale},
		{"decr", "`DECR`; below zero, `INCR` back (the compensation) and sold out", newDecrSale},
		{"stock-reserve", "`stock.Reserve` of one unit, 10-minute hold", newStockSale(false)},
		{"stock-reserve-commit", "`stock.Reserve`, then `stock.Commit`: the whole sale", newStockSale(true)},
	}
}

// RunSale runs cfg.Rounds sales with row against the Redis at addr.
func RunSale(ctx context.Context, addr string, row SaleRow, cfg SaleConfig) (_ SaleResult, err error) {
	s, err := NewSale(addr, row, cfg)
	if err != nil {
		return SaleResult{}, err
	}
	defer func() { err = errors.Join(err, s.Close()) }()
	for range cfg.Rounds {
		if err := s.Round(ctx); err != nil {
			return s.Result(), err
		}
	}
	return s.Result(), nil
}

// Sale runs the rounds of one row one at a time, so that the rounds of
// several rows can take turns, and adds them up.
type Sale struct {
	row       SaleRow
	cfg       SaleConfig
	clients   []*redis.Client
	approach  saleApproach
	res       SaleResult
	latencies []time.Duration
	elapsed   time.Duration
	addr      string
	clientCPU time.Duration
	serverCPU time.Duration
}

// NewSale connects row's clients to the Redis at addr.
func NewSale(addr string, row SaleRow, cfg SaleConfig) (*Sale, error) {
	if cfg.Items < 1 || cfg.Buyers < 1 || cfg.Goroutines < 1 || cfg.Clients < 1 || cfg.MaxRetries < 0 {
		return nil, fmt.Errorf("bench: invalid SaleConfig %+v", cfg)
	}
	s := &Sale{row: row, cfg: cfg, clients: make([]*redis.Client, cfg.Clients), addr: addr}
	for i := range s.clients {
		s.clients[i] = redis.NewClient(&redis.Options{Addr: addr, PoolSize: cfg.Goroutines})
	}
	s.approach = row.New(s.clients, cfg)
	s.res = SaleResult{Approach: row.Name, Items: cfg.Items, Buyers: cfg.Buyers}
	return s, nil
}

// Round runs one sale on a fresh stock.
func (s *Sale) Round(ctx context.Context) error {
	key := fmt.Sprintf("sale:%s:%d:%d", s.row.Name, time.Now().UnixNano(), s.res.Rounds)
	if err := s.approach.stock(ctx, key, s.cfg.Items); err != nil {
		return err
	}
	meter, err := StartCPU(ctx, []string{s.addr})
	if err != nil {
		return err
	}
	r, err := saleRound(ctx, s.approach, key, s.cfg)
	client, server, cpuErr := meter.Stop(ctx)
	if err = errors.Join(err, cpuErr); err != nil {
		return err
	}
	s.clientCPU += client
	s.serverCPU += server
	left, err := s.approach.left(ctx, key)
	if err != nil {
		return err
	}
	s.res.Rounds++
	s.res.Sold += r.sold
	s.res.Oversold += max(r.sold-s.cfg.Items, 0)
	s.res.Left += left
	s.res.Retries += r.retries
	s.res.GaveUp += r.gaveUp
	s.elapsed += r.elapsed
	s.latencies = append(s.latencies, r.latencies...)
	return nil
}

// Result adds up the rounds so far.
func (s *Sale) Result() SaleResult {
	res := s.res
	res.Seconds = s.elapsed.Seconds()
	if s.elapsed > 0 {
		res.PerSec = float64(res.Sold) / s.elapsed.Seconds()
	}
	res.P50Us = float64(Percentile(s.latencies, 50)) / 1e3
	res.P99Us = float64(Percentile(s.latencies, 99)) / 1e3
	if buyers := res.Rounds * res.Buyers; buyers > 0 {
		res.ClientCPUUs = float64(s.clientCPU.Microseconds()) / float64(buyers)
		res.ServerCPUUs = float64(s.serverCPU.Microseconds()) / float64(buyers)
	}
	return res
}

// Close closes the row's clients.
func (s *Sale) Close() error {
	errs := []error{s.approach.close()}
	for _, c := range s.clients {
		errs = append(errs, c.Close())
	}
	return errors.Join(errs...)
}

type roundResult struct {
	sold, retries, gaveUp int
	elapsed               time.Duration
	latencies             []time.Duration // of the purchases that succeeded
}

// saleRound has the buyers buy, cfg.Goroutines at a time, each goroutine
// taking the next buyer until there is none.
func saleRound(ctx context.Context, a saleApproach, key string, cfg SaleConfig) (roundResult, error) {
	var next atomic.Int64
	results := make([]roundResult, cfg.Goroutines)
	errs := make([]error, cfg.Goroutines)
	var wg sync.WaitGroup
	start := time.Now()
	for g := range cfg.Goroutines {
		wg.Go(func() {
			r := &results[g]
			for {
				buyer := int(next.Add(1)) - 1
				if buyer >= cfg.Buyers || ctx.Err() != nil {
					return
				}
				t0 := time.Now()
				bought, retries, err := a.buy(ctx, g%cfg.Clients, key, buyer)
				r.retries += retries
				switch {
				case errors.Is(err, errGaveUp):
					r.gaveUp++
				case err != nil:
					errs[g] = err
					return
				case bought:
					r.sold++
					r.latencies = append(r.latencies, time.Since(t0))
				}
			}
		})
	}
	wg.Wait()
	total := roundResult{elapsed: time.Since(start)}
	for _, r := range results {
		total.sold += r.sold
		total.retries += r.retries
		total.gaveUp += r.gaveUp
		total.latencies = append(total.latencies, r.latencies...)
	}
	return total, errors.Join(append(errs, ctx.Err())...)
}

// errGaveUp is a buyer past MaxRetries.
var errGaveUp = errors.New("bench: gave up after MaxRetries")

// WriteSaleTable writes results as a markdown table, throughput also as a
// multiple of the dlock-lock row's.
func WriteSaleTable(w io.Writer, cfg SaleConfig, results []SaleResult) {
	var locked float64
	for _, r := range results {
		if r.Approach == "dlock-lock" {
			locked = r.PerSec
		}
	}
	fmt.Fprintf(w, "%d rounds of %d items, %d buyers, %d goroutines over %d clients\n\n",
		cfg.Rounds, cfg.Items, cfg.Buyers, cfg.Goroutines, cfg.Clients)
	fmt.Fprintln(w, "| approach | sold | oversold | left unsold | retries | gave up | sales/s | vs dlock-lock | p50 | p99 | client CPU / buyer | Redis CPU / buyer |")
	fmt.Fprintln(w, "|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|")
	for _, r := range results {
		vs := "—"
		if locked > 0 {
			vs = fmt.Sprintf("%.1f×", r.PerSec/locked)
		}
		fmt.Fprintf(w, "| `%s` | %d | %d | %d | %d | %d | %.0f | %s | %s | %s | %.1f µs | %.1f µs |\n",
			r.Approach, r.Sold, r.Oversold, r.Left, r.Retries, r.GaveUp, r.PerSec, vs,
			micros(r.P50Us), micros(r.P99Us), r.ClientCPUUs, r.ServerCPUUs)
	}
	fmt.Fprintln(w)
	for _, row := range SaleRows() {
		fmt.Fprintf(w, "- `%s`: %s\n", row.Name, row.Note)
	}
}

func micros(us float64) string {
	if us >= 10000 {
		return fmt.Sprintf("%.0f ms", us/1000)
	}
	if us >= 1000 {
		return fmt.Sprintf("%.1f ms", us/1000)
	}
	return fmt.Sprintf("%.0f µs", us)
}
