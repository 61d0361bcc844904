package demo

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/dlock-go/dlock"
	"github.com/redis/go-redis/v9"
)

// env is what every case gets: the Redis to use, a dlock Client on it that
// all the simulated instances share (as goroutines of one process should),
// and a prefix that keeps this run's keys apart from any other run's.
type env struct {
	rdb    *redis.Client
	locker *dlock.Client
	prefix string // "dlock-demo:<run id>:"
}

// A scenario is one case of the demo: one row of its table.
type scenario struct {
	name string
	pkg  string // the package of dlock that the case uses
	run  func(ctx context.Context, d *env) result
}

// result is what a case reports.
type result struct {
	happened  string // what the instances did, in lines of about 50 characters
	invariant string // "ok: ..." or what broke
	ok        bool   // the invariant held; always true for a contrast
	err       error  // why the case could not run to its end, if it could not
}

// scenarios lists the cases in the order they run and are shown.
func scenarios() []scenario {
	return []scenario{
		{"double-click pay", "idempotency", doubleClickPay},
		{"cron on two hosts", "jobs", cronOnTwoHosts},
		{"  (released early)", "dlock", cronReleasedEarly},
		{"flash sale", "stock", flashSale},
		{"hot cache key", "cachefill", hotKeyMiss},
		{"expired holder", "fence", expiredHolder},
		{"long job", "dlock", longRenewedJob},
		{"  (not renewed)", "dlock", longUnrenewedJob},
		{"lost lock", "dlock", lostLock},
		{"leader dies", "election", leaderDies},
		{"exports, 3 at once", "dlock", limitedExports},
		{"readers, a writer", "dlock", readersAndWriter},
		{"redlock, 5 nodes", "dlock", redlockQuorum},
	}
}

// key returns the name of a key of this run.
func (d *env) key(format string, args ...any) string {
	return d.prefix + fmt.Sprintf(format, args...)
}

// cleanup deletes a case's data keys. Lock keys are not deleted: they were
// released or expire within seconds.
func (d *env) cleanup(ctx context.Context, keys ...string) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Second)
	defer cancel()
	_ = d.rdb.Del(ctx, keys...).Err() // leftovers are harmless: the run id is never reused
}

// getInt reads an integer key; a missing key counts as zero.
func (d *env) getInt(ctx context.Context, key string) (int64, error) {
	n, err := d.rdb.Get(ctx, key).Int64()
	if errors.Is(err, redis.Nil) {
		return 0, nil
	}
	return n, err
}

// failed is the result of a case that could not run to its end.
func failed(err error) result {
	return result{happened: "could not run", invariant: "FAILED (see below)", err: err}
}

// verdict turns the problems found by a case's checks into its result.
func verdict(happened, okText string, problems []string) result {
	if len(problems) == 0 {
		return result{happened: happened, invariant: "ok: " + okText, ok: true}
	}
	return result{happened: happened, invariant: "BROKEN: " + strings.Join(problems, "; ")}
}

// sleep waits for d, or until ctx is done.
func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return context.Cause(ctx)
	}
}

// together runs fn(0) to fn(n-1) at once, each in a goroutine standing in
// for an instance or a host, and returns when all have, with their errors
// joined.
func together(n int, fn func(i int) error) error {
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { errs[i] = fn(i) })
	}
	wg.Wait()
	return errors.Join(errs...)
}

// errText is err's message without the "dlock: " the library starts it
// with, for a cell of the table.
func errText(err error) string {
	return strings.TrimPrefix(err.Error(), "dlock: ")
}
