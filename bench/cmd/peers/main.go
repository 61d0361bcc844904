// Command peers runs the measurements of dlock beside its peers that are
// not Go benchmarks, and writes the tables of docs/benchmarks.md's peers
// section. scripts/bench-peers runs it.
//
//	peers hotkey [flags]   (c) clients competing for one key: a JSON line per row
//	peers renew [flags]    (d) many locks held and renewed: a JSON line per row
//	peers scripts [flags]  what one obtain+release costs the server, by command
//	peers rows             every measurement's rows and how each is configured
//	peers report [FILE...] markdown tables from go test -bench output and JSON lines
//
// hotkey and renew start a redis-server for each row, through redistest,
// and stop it; they run for a bounded time and stop by themselves. Run
// "peers hotkey -h" for the flags.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/dlock-go/dlock/bench"
	"github.com/dlock-go/dlock/redistest"
)

const usage = `usage: peers hotkey|renew [flags]   run (c) or (d), a JSON line per row
       peers scripts [flags]       the server's time per obtain+release, by command
       peers rows                  the rows and their configuration, as markdown
       peers report [FILE...]      markdown tables from bench output and JSON lines
`

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return 2
	}
	var err error
	switch args[0] {
	case "hotkey":
		err = hotKey(ctx, args[1:], stdout, stderr)
	case "renew":
		err = renew(ctx, args[1:], stdout, stderr)
	case "herd":
		err = herd(ctx, args[1:], stdout, stderr)
	case "scripts":
		err = scripts(ctx, args[1:], stdout, stderr)
	case "rows":
		bench.WriteRows(stdout)
	case "report":
		err = report(args[1:], stdin, stdout)
	default:
		fmt.Fprint(stderr, usage)
		return 2
	}
	switch {
	case errors.Is(err, flag.ErrHelp):
		return 0
	case err != nil:
		fmt.Fprintf(stderr, "peers: %v\n", err)
		return 1
	}
	return 0
}

func hotKey(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("peers hotkey", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var cfg bench.HotKeyConfig
	fs.IntVar(&cfg.Clients, "clients", 16, "clients competing, each with its own connections")
	fs.DurationVar(&cfg.Duration, "duration", 5*time.Second, "how long they compete, per row")
	fs.DurationVar(&cfg.Hold, "hold", time.Millisecond, "how long a client holds the lock")
	// 2s: far longer than the hold, and no longer than dlock's FairLease,
	// under which a fair handoff needs no round trip of the waiter's own.
	fs.DurationVar(&cfg.TTL, "ttl", 2*time.Second, "the locks' ttl")
	fs.DurationVar(&cfg.Monitor, "monitor", time.Second, "length of the separate run under MONITOR, per row; 0 skips it")
	libs := fs.String("libs", "", "comma-separated rows to run (default all; see peers rows)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	rows, err := bench.Select(bench.WaitingRows(), *libs)
	if err != nil {
		return err
	}
	return eachRow(rows, stdout, stderr, func(addr string, row bench.Row) (any, error) {
		return bench.RunHotKey(ctx, addr, row, cfg)
	})
}

func renew(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("peers renew", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var cfg bench.RenewConfig
	fs.IntVar(&cfg.Locks, "locks", 10000, "locks held at once")
	fs.DurationVar(&cfg.TTL, "ttl", 3*time.Second, "the locks' ttl")
	fs.IntVar(&cfg.Periods, "periods", 3, "how many ttls to hold them")
	fs.IntVar(&cfg.Workers, "workers", 64, "goroutines obtaining and releasing them")
	libs := fs.String("libs", "", "comma-separated rows to run (default all; see peers rows)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	rows, err := bench.Select(bench.RenewRows(), *libs)
	if err != nil {
		return err
	}
	return eachRow(rows, stdout, stderr, func(addr string, row bench.Row) (any, error) {
		return bench.RunRenew(ctx, addr, row, cfg)
	})
}

// eachRow runs measure for every row, each against a redis-server of its
// own, and prints the results as JSON lines.
func eachRow(rows []bench.Row, stdout, stderr io.Writer, measure func(addr string, row bench.Row) (any, error)) error {
	enc := json.NewEncoder(stdout)
	for _, row := range rows {
		fmt.Fprintf(stderr, "peers: %s\n", row.Name)
		res, err := withServer(func(addr string) (any, error) { return measure(addr, row) })
		if err != nil {
			return fmt.Errorf("%s: %w", row.Name, err)
		}
		if err := enc.Encode(res); err != nil {
			return err
		}
	}
	return nil
}

// herd runs the flash sale of the herd row, default mode and fair, on a
// redis-server of its own for each, and prints a JSON line for each.
func herd(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("peers herd", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var cfg bench.HerdConfig
	fs.IntVar(&cfg.Clients, "clients", 4, "dlock Clients, each with its own connections")
	fs.IntVar(&cfg.Buyers, "buyers", 1200, "buyers, spread over the clients")
	fs.IntVar(&cfg.Items, "items", 1000, "items in stock")
	fs.DurationVar(&cfg.TTL, "ttl", 10*time.Second, "ttl of the lock")
	modes := fs.String("modes", "default,fair", "the modes to run, in this order")
	if err := fs.Parse(args); err != nil {
		return err
	}
	enc := json.NewEncoder(stdout)
	for mode := range strings.SplitSeq(*modes, ",") {
		cfg.Fair = mode == "fair"
		res, err := withServer(func(addr string) (any, error) { return bench.RunHerd(ctx, addr, cfg) })
		if err != nil {
			return fmt.Errorf("herd %s: %w", mode, err)
		}
		if err := enc.Encode(res); err != nil {
			return err
		}
	}
	return nil
}

// scripts runs bench.RunScriptCost for the rows of (a), each on a server
// of its own, and prints a line per row.
func scripts(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("peers scripts", flag.ContinueOnError)
	fs.SetOutput(stderr)
	cycles := fs.Int("cycles", 20000, "cycles per row, one at a time")
	names := fs.String("rows", "raw,dlock,rueidislock-tuned,redislock,redsync", "rows of (a), comma-separated")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *cycles < 1 {
		return fmt.Errorf("-cycles %d: want at least 1", *cycles)
	}
	rows, err := bench.Select(bench.UncontendedRows(), *names)
	if err != nil {
		return err
	}
	for _, row := range rows {
		res, err := withServer(func(addr string) (any, error) { return bench.RunScriptCost(ctx, addr, row, *cycles) })
		if err != nil {
			return fmt.Errorf("scripts %s: %w", row.Name, err)
		}
		fmt.Fprintln(stdout, res)
	}
	return nil
}

// withServer calls f with the address of a new redis-server, stopped when
// f returns.
func withServer(f func(addr string) (any, error)) (any, error) {
	srv, stop, err := redistest.Start()
	if err != nil {
		return nil, err
	}
	defer stop()
	return f(srv.Addr())
}

func report(files []string, stdin io.Reader, stdout io.Writer) error {
	readers := []io.Reader{stdin}
	if len(files) > 0 {
		readers = nil
		for _, name := range files {
			f, err := os.Open(name)
			if err != nil {
				return err
			}
			defer f.Close()
			readers = append(readers, f)
		}
	}
	res, err := bench.ReadResults(io.MultiReader(readers...))
	if err != nil {
		return err
	}
	res.WriteMarkdown(stdout)
	return nil
}
