package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"sync"
	"syscall"

	"github.com/dlock-go/dlock"
)

// What the verbs that run a command (run, elect) set up before it: the
// connection to Redis, and the signals they pass on to it.

// connect connects to the Redis server or quorum of --redis, and returns a
// Client on it and the function that closes both. It fails with the exit
// status and the error to print.
func (r *runner) connect(ctx context.Context) (locker *dlock.Client, disconnect func(), code int, err error) {
	for _, srv := range r.redis {
		if srv.opts.ReadTimeout == 0 && srv.opts.WriteTimeout == 0 { // not set in the URL
			// An answer later than this is of no use to the renewal: a
			// connection that hangs is given up in time for a retry.
			srv.opts.ReadTimeout = min(redisTimeout, r.ttl/3)
			srv.opts.WriteTimeout = srv.opts.ReadTimeout
		}
	}
	rdbs, down, err := connectAll(ctx, r.redis, redisTimeout)
	if err != nil {
		return nil, nil, exitUnavailable, err
	}
	for _, d := range down {
		r.inform("%s", downWarning(d, len(rdbs), len(down)))
	}
	opts := []dlock.Option{dlock.WithHolderName(r.holderName())}
	if r.verbose {
		opts = append(opts, dlock.WithLogger(slog.New(&lineHandler{w: r.stderr})))
	}
	locker, err = newLocker(rdbs, runNodeTimeout(r.ttl), opts...)
	if err != nil { // the URLs were checked: cannot happen
		closeAll(rdbs)
		return nil, nil, exitUsage, err
	}
	return locker, func() {
		locker.Close() // before closeAll: it waits for calls given up on
		closeAll(rdbs)
	}, exitOK, nil
}

// holderName is the name of dlock's holdings (dlock.WithHolderName), which
// status, list and other dlock runs show: the host, dlock's pid and what
// it runs, as in "host-b pid 4121 (report via dlock run)".
func (r *runner) holderName() string {
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "unknown-host"
	}
	verb := "run"
	if r.verb != "" {
		verb = r.verb
	}
	program := filepath.Base(r.command[0])
	if len(program) > 64 {
		program = program[:61] + "..."
	}
	name := fmt.Sprintf("%s pid %d (%s via dlock %s)", host, os.Getpid(), program, verb)
	return name[:min(len(name), dlock.MaxHolderNameLen)] // a host name may be long
}

// catchSignals returns a channel that receives the SIGINT, SIGTERM and
// SIGHUP sent to dlock (those not ignored), to pass on to a command, until
// stop is called.
func catchSignals() (sigs chan os.Signal, stop func()) {
	sigs = make(chan os.Signal, 8)
	if caught := notIgnored(syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP); len(caught) > 0 { // none would mean all
		signal.Notify(sigs, caught...)
	}
	return sigs, func() { signal.Stop(sigs) }
}

// cancelOnSignal returns a context that the first signal on sigs cancels,
// until stop is called. stop returns that signal, or nil.
func cancelOnSignal(parent context.Context, sigs <-chan os.Signal) (ctx context.Context, stop func() os.Signal) {
	ctx, cancel := context.WithCancelCause(parent)
	quit, done := make(chan struct{}), make(chan struct{})
	var got os.Signal
	go func() {
		defer close(done)
		select {
		case got = <-sigs:
			cancel(fmt.Errorf("dlock: got %v", got))
		case <-quit:
		}
	}()
	return ctx, sync.OnceValue(func() os.Signal {
		close(quit)
		<-done
		cancel(nil)
		return got
	})
}
