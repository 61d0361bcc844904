package demo

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/dlock-go/dlock"
	"github.com/dlock-go/dlock/jobs"
)

// The nightly job in the crontab of two hosts. Their clocks differ
// by seconds, as unsynchronised clocks do, so the second host fires after
// the first has already finished a quick job. Each host runs it through a
// jobs.Runner in the slot its own clock gives: the hosts agree on the slot,
// and the first run's done record makes the late host skip it. The naive
// lock, released right after the job, lets the late host run the job a
// second time (shown as a contrast).
const (
	cronSkew      = 2 * time.Second  // how much later the second host fires, and how late its clock is
	cronLockTTL   = 5 * time.Second  // renewed while the job runs
	cronRetention = 10 * time.Second // how long the slot's records stay: longer than any skew plus the job
	cronPeriod    = 24 * time.Hour
)

// cronFired is when the first host's crontab fires the nightly job, by its
// clock.
var cronFired = time.Date(2026, 11, 21, 2, 0, 0, 0, time.UTC)

func cronOnTwoHosts(ctx context.Context, d *env) result {
	job := d.key("cron:nightly-report")
	runsKey := job + ":runs"
	defer d.cleanup(ctx, runsKey)
	outcomes := make([]jobs.Outcome, 2)
	err := together(len(outcomes), func(host int) (err error) {
		outcomes[host], err = d.jobsHost(ctx, job, runsKey, host)
		return err
	})
	if err != nil {
		return failed(err)
	}
	runs, err := d.getInt(ctx, runsKey)
	if err != nil {
		return failed(err)
	}
	happened := fmt.Sprintf("2 hosts, the 2nd %v late (jobs.Runner): job ran %s;\nthe 2nd host: %s", cronSkew, times(runs), outcomes[1])
	var problems []string
	if runs != 1 {
		problems = append(problems, "the job ran "+times(runs))
	}
	if outcomes[0] != jobs.Ran || outcomes[1] != jobs.AlreadyDone {
		problems = append(problems, fmt.Sprintf("the hosts' outcomes: %s, %s; want ran, already done", outcomes[0], outcomes[1]))
	}
	return verdict(happened, "ran once", problems)
}

// jobsHost is the crontab entry of host number host: it fires host times
// cronSkew late, with a clock as late, and runs the job in the slot of its
// clock.
func (d *env) jobsHost(ctx context.Context, job, runsKey string, host int) (jobs.Outcome, error) {
	late := time.Duration(host) * cronSkew
	if err := sleep(ctx, late); err != nil {
		return 0, err
	}
	runner, err := jobs.New(d.locker, jobs.WithTTL(cronLockTTL), jobs.WithRetention(cronRetention),
		jobs.WithHost(fmt.Sprintf("host-%d", host+1)))
	if err != nil {
		return 0, err
	}
	slot := jobs.Slot(cronFired.Add(late), cronPeriod)
	return runner.Run(ctx, job, slot, func(ctx context.Context) error {
		return d.rdb.Incr(ctx, runsKey).Err() // the job, a quick one
	})
}

// cronReleasedEarly is the contrast: the same hosts, each taking a plain
// lock on the slot and releasing it when the job is done. It checks
// nothing: running twice is what it shows.
func cronReleasedEarly(ctx context.Context, d *env) result {
	lockKey := d.key("cron:nightly-report-released:%s", cronFired.Format(time.RFC3339))
	runsKey := lockKey + ":runs"
	defer d.cleanup(ctx, runsKey)
	err := together(2, func(host int) error {
		return d.cronHost(ctx, lockKey, runsKey, time.Duration(host)*cronSkew)
	})
	if err != nil {
		return failed(err)
	}
	runs, err := d.getInt(ctx, runsKey)
	if err != nil {
		return failed(err)
	}
	return result{
		happened:  "same, lock released after the job: ran " + times(runs),
		invariant: "contrast: the job ran twice",
		ok:        true,
	}
}

// cronHost is one host's crontab entry firing after delay, with the naive
// lock: one attempt, released after the job.
func (d *env) cronHost(ctx context.Context, lockKey, runsKey string, delay time.Duration) error {
	if err := sleep(ctx, delay); err != nil {
		return err
	}
	job := func(ctx context.Context) error {
		return d.rdb.Incr(ctx, runsKey).Err() // the job, a quick one
	}
	err := d.locker.Do(ctx, lockKey, cronLockTTL, job, dlock.WithoutWait())
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
