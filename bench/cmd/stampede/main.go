// Command stampede runs a cache stampede on a cold key: goroutines over
// simulated processes Get one cold key at once, with singleflight alone, a
// lock whose waiters poll, and package cachefill, against one redis-server
// it starts on loopback (through redistest), and prints a markdown table
// for docs/benchmarks.md.
//
//	go run ./cmd/stampede [-rounds 5] [-rows singleflight,cachefill] [-json] [-own-contexts] [-per-round] [-trace file] [-cpuprofile file] [-memprofile file]
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
	"runtime"
	"runtime/pprof"
	"runtime/trace"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/dlock-go/dlock/bench"
	"github.com/dlock-go/dlock/redistest"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	if err != nil {
		if !errors.Is(err, flag.ErrHelp) {
			fmt.Fprintln(os.Stderr, "stampede:", err)
		}
		os.Exit(1)
	}
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("stampede", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var cfg bench.StampedeConfig
	fs.IntVar(&cfg.Goroutines, "goroutines", 1000, "goroutines that Get the key at once")
	fs.IntVar(&cfg.Processes, "processes", 8, "simulated processes, each with a go-redis client and a cache")
	fs.IntVar(&cfg.Rounds, "rounds", 5, "stampedes per row, a new cold key each")
	fs.DurationVar(&cfg.Load, "load", 100*time.Millisecond, "how long loading the key takes")
	fs.BoolVar(&cfg.OwnContexts, "own-contexts", false, "give each Get a context of its own, as each request of a server has, instead of one shared by all")
	perRound := fs.Bool("per-round", false, "print each round's load start, p99 after the load, and garbage collections to stderr")
	rows := fs.String("rows", "", "comma-separated rows to run (default all)")
	asJSON := fs.Bool("json", false, "print a JSON line per row instead of a table")
	cpuProfile := fs.String("cpuprofile", "", "write a CPU profile of the run to this file (go tool pprof)")
	memProfile := fs.String("memprofile", "", "write an allocation profile of the run to this file (go tool pprof -sample_index=alloc_space)")
	traceFile := fs.String("trace", "", "write a runtime trace of the run to this file (go tool trace), with a log event at the start of each round and at the end of its load")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if cfg.Goroutines < 1 || cfg.Processes < 1 || cfg.Rounds < 1 || cfg.Load < 0 {
		return fmt.Errorf("-goroutines, -processes and -rounds must be positive, -load not negative")
	}
	selected := bench.StampedeRows()
	if *rows != "" {
		names := strings.Split(*rows, ",")
		selected = slices.DeleteFunc(selected, func(r bench.StampedeRow) bool { return !slices.Contains(names, r.Name) })
	}
	if *cpuProfile != "" {
		f, err := os.Create(*cpuProfile)
		if err != nil {
			return err
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return err
		}
		defer pprof.StopCPUProfile()
	}
	if *perRound {
		cfg.PerRound = stderr
	}
	if *memProfile != "" {
		runtime.MemProfileRate = 4096
		defer func() {
			if err := writeMemProfile(*memProfile); err != nil {
				fmt.Fprintln(stderr, "stampede:", err)
			}
		}()
	}
	if *traceFile != "" {
		f, err := os.Create(*traceFile)
		if err != nil {
			return err
		}
		defer f.Close()
		if err := trace.Start(f); err != nil {
			return err
		}
		defer trace.Stop()
	}
	srv, stopServer, err := redistest.Start()
	if err != nil {
		return err
	}
	defer stopServer()
	var results []bench.StampedeResult
	for _, row := range selected {
		r, err := bench.RunStampede(ctx, srv.Addr(), row, cfg)
		if err != nil {
			return fmt.Errorf("%s: %w", row.Name, err)
		}
		fmt.Fprintf(stderr, "%s done\n", row.Name)
		results = append(results, r)
	}
	if *asJSON {
		enc := json.NewEncoder(stdout)
		for _, r := range results {
			if err := enc.Encode(r); err != nil {
				return err
			}
		}
		return nil
	}
	bench.WriteStampedeTable(stdout, cfg, results)
	return nil
}

// writeMemProfile writes the allocations of the run so far to file.
func writeMemProfile(file string) error {
	f, err := os.Create(file)
	if err != nil {
		return err
	}
	if err := pprof.Lookup("allocs").WriteTo(f, 0); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
