// Command sale runs a flash sale with the usual approaches (no lock, a
// lock, WATCH, DECR) and with package stock, against one redis-server it starts on loopback
// (through redistest), and prints a markdown table for docs/benchmarks.md.
//
//	go run ./cmd/sale [-rounds 5] [-rows naive,stock-reserve] [-json]
//
// The rows take turns, a round each; a round is a fresh stock of -items
// units and -buyers buyers who want one each, served by -goroutines
// goroutines over -clients go-redis clients.
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
	"slices"
	"strings"
	"syscall"

	"github.com/dlock-go/dlock/bench"
	"github.com/dlock-go/dlock/redistest"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	if err != nil {
		if !errors.Is(err, flag.ErrHelp) {
			fmt.Fprintln(os.Stderr, "sale:", err)
		}
		os.Exit(1)
	}
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) (err error) {
	fs := flag.NewFlagSet("sale", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var cfg bench.SaleConfig
	fs.IntVar(&cfg.Items, "items", 1000, "units on sale per round")
	fs.IntVar(&cfg.Buyers, "buyers", 1200, "buyers per round, one unit each")
	fs.IntVar(&cfg.Goroutines, "goroutines", 64, "goroutines serving the buyers")
	fs.IntVar(&cfg.Clients, "clients", 4, "go-redis clients the goroutines are spread over")
	fs.IntVar(&cfg.Rounds, "rounds", 5, "sales per row")
	fs.IntVar(&cfg.MaxRetries, "max-retries", 1000, "WATCH retries before a buyer gives up")
	rows := fs.String("rows", "", "comma-separated rows to run (default all)")
	asJSON := fs.Bool("json", false, "print a JSON line per row instead of a table")
	if err := fs.Parse(args); err != nil {
		return err
	}
	selected := bench.SaleRows()
	if *rows != "" {
		names := strings.Split(*rows, ",")
		selected = slices.DeleteFunc(selected, func(r bench.SaleRow) bool { return !slices.Contains(names, r.Name) })
	}
	srv, stopServer, err := redistest.Start()
	if err != nil {
		return err
	}
	defer stopServer()
	// The rows take turns, a round each, so that a machine busier at one
	// moment than another slows every row alike.
	sales := make([]*bench.Sale, len(selected))
	for i, row := range selected {
		if sales[i], err = bench.NewSale(srv.Addr(), row, cfg); err != nil {
			return err
		}
		defer func(s *bench.Sale) { err = errors.Join(err, s.Close()) }(sales[i])
	}
	for round := range cfg.Rounds {
		for i, s := range sales {
			if err := s.Round(ctx); err != nil {
				return fmt.Errorf("%s: %w", selected[i].Name, err)
			}
		}
		fmt.Fprintf(stderr, "round %d of %d done\n", round+1, cfg.Rounds)
	}
	var results []bench.SaleResult
	for _, s := range sales {
		results = append(results, s.Result())
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
	bench.WriteSaleTable(stdout, cfg, results)
	return nil
}
