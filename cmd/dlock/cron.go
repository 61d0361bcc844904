package main

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/dlock-go/dlock"
)

// The nightly job in the crontab of two hosts (seed 003). Their clocks differ
// by seconds, as unsynchronised clocks do, so the second host fires after
// the first has already finished a quick job. Each host makes one attempt
// (Do WithoutWait), and the lock is kept until well after the slot
// (WithMinHold), then left to expire: released right after the job, it lets
// the late host run the job a second time, which is the seeds' bug (shown
// as a contrast).
const (
	cronSkew    = 2 * time.Second  // how much later the second host fires
	cronLockTTL = 5 * time.Second  // renewed while the job runs
	cronMinHold = 10 * time.Second // longer than any skew plus the job
	cronSlot    = "2026-11-21T02:00"
)

func cronOnTwoHosts(ctx context.Context, d *demo) result {
	runs, err := d.cron(ctx, "nightly-report", false)
	if err != nil {
		return failed(err)
	}
	happened := fmt.Sprintf("2 hosts, the 2nd %v late: job ran %s", cronSkew, times(runs))
	var problems []string
	if runs != 1 {
		problems = append(problems, "the job ran "+times(runs))
	}
	return verdict(happened, "ran once", problems)
}

// cronReleasedEarly is the contrast: the same hosts, releasing the lock when
// the job is done. It checks nothing: running twice is what it shows.
func cronReleasedEarly(ctx context.Context, d *demo) result {
	runs, err := d.cron(ctx, "nightly-report-released", true)
	if err != nil {
		return failed(err)
	}
	return result{
		happened:  "same, lock released after the job: ran " + times(runs),
		invariant: "contrast: the seeds' bug",
		ok:        true,
	}
}

// cron fires the job on two hosts, the second cronSkew later, and returns how
// many times it ran.
func (d *demo) cron(ctx context.Context, job string, releaseAfter bool) (runs int64, err error) {
	lockKey := d.key("cron:%s:%s", job, cronSlot)
	runsKey := d.key("cron:%s:%s:runs", job, cronSlot)
	defer d.cleanup(ctx, runsKey)

	delays := []time.Duration{0, cronSkew}
	errs := make([]error, len(delays))
	var wg sync.WaitGroup
	for host, delay := range delays {
		wg.Go(func() {
			errs[host] = d.cronHost(ctx, lockKey, runsKey, delay, releaseAfter)
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return 0, err
	}
	return d.getInt(ctx, runsKey)
}

// cronHost is one host's crontab entry firing after delay.
func (d *demo) cronHost(ctx context.Context, lockKey, runsKey string, delay time.Duration, releaseAfter bool) error {
	if err := sleep(ctx, delay); err != nil {
		return err
	}
	job := func(ctx context.Context) error {
		return d.rdb.Incr(ctx, runsKey).Err() // the job, a quick one
	}
	opts := []dlock.ObtainOption{dlock.WithoutWait()}
	if !releaseAfter {
		opts = append(opts, dlock.WithMinHold(cronMinHold)) // the slot stays taken, then the lock expires
	}
	err := d.locker.Do(ctx, lockKey, cronLockTTL, job, opts...)
	if errors.Is(err, dlock.ErrNotObtained) {
		return nil // another host has this slot
	}
	return err
}

func times(n int64) string {
	switch n {
	case 1:
		return "once"
	case 2:
		return "twice"
	}
	return fmt.Sprintf("%d times", n)
}
