// Package jobs runs a job at most once per schedule slot across hosts: the
// cron entry deployed on every host, of which one must do the work.
//
//	runner, err := jobs.New(locker) // one per process
//	if err != nil {
//		return err // an invalid option: jobs.ErrInvalid
//	}
//	slot := jobs.Slot(time.Now(), 24*time.Hour)
//	outcome, err := runner.Run(ctx, "nightly-report", slot, report)
//	// outcome: jobs.Ran here, or AlreadyDone, RunningElsewhere, ...
//
// The naive lock (take it, run, release it) runs a fast job twice when a
// host's clock is late: its cron fires after the others released the lock.
// A Runner keys the run by its slot, and a successful run leaves a done
// record for the slot, which later and late hosts find and skip.
//
// A slot is the period a run was fired in (see Slot): cron fires by the
// host's own clock, so that is what hosts agree on, early or late clocks
// alike. An hourly job fired at 21:00:03, at 21:33 (by hand, by a host that
// booted late, a retry) or at 21:59 runs in the slot of 21:00; fired at
// 21:59:59.8 by a clock a little fast (up to min(1s, period/100) early), in
// the slot of 22:00. The 22:00 run is never taken ahead of time.
//
// # Names
//
// A job name is valid UTF-8 of 1 to 200 bytes as its records store it
// (JSON: a control character takes six bytes, a quote or a backslash two,
// anything else its own length, "<", ">" and "&" included). Run, Begin
// and History refuse another name with an error wrapping ErrInvalid,
// before they touch Redis, so that every name they accept has room for
// all the records of its runs. A host name (WithHost) is cut to 100 bytes
// and an error to 200, counted the same way.
//
// # Guarantees
//
//   - One run at a time per job and slot: the run holds a dlock lock of the
//     slot, renewed while it runs; its function's context is cancelled if
//     the lock is lost.
//   - Once per slot: after a success, no Run of the same slot runs the job
//     again while the done record lives: RetentionPeriods periods given
//     WithPeriod, else a day, or as WithRetention says.
//     Hosts agree on the slot as long as each fires the job within the
//     period by its own clock (see Slot); a period that is not positive
//     has no slots, and Run refuses its zero slot.
//   - Failures are recorded (an error, a panic, a lost lease, a host that
//     died while it ran), and a slot is tried again on the next Run of any
//     host, up to WithAttempts attempts in all (one by default).
//   - History shows the recent attempts of a job: slot, host, start, end,
//     status, error.
//   - It works on a single Redis (also Sentinel and Cluster) and on a
//     Redlock quorum; every record is a dlock lock with a value
//     (dlock.WithValue), so it needs no other key type, and expires.
//
// # Metrics
//
// A Runner tells the observers of its Client (dlock.WithObserver) that are
// observe.PackageObservers how each run ended (observe.OpRun), with the
// job's name and, for a run made here, how long it took: ran, failed,
// already done, running elsewhere, no attempts left, or an error of Redis
// before it ran. Calls refused for bad input are not told. The Prometheus
// and OpenTelemetry modules make metrics of them. Without such an
// observer nothing is built.
//
// # Failure modes
//
// A run is a lease: a host that is paused longer than the lease (WithTTL)
// while it runs may resume after another host took over the slot; fence
// what the job writes if that matters (the run's lock is
// "dlock:job:NAME@SLOT/run"). Redis can lose the records (a restart without
// persistence, a failover): a slot may then run again. A job that succeeded
// but whose done record could not be written (Redis failed at that moment)
// is reported with the error, and may run again. A Begin whose attempt
// record Redis did not answer for returns the error, and that attempt may
// still count (as abandoned, in History) once Redis answers.
//
// Every record is written by a script that is safe to run twice: go-redis
// sends a command again when its reply is late (MaxRetries, ReadTimeout),
// and every copy runs; a copy that finds the record its own says so, as
// the first would have. The package's tests show it with Redis paused for
// seconds while each record is written; all but one of them run only with
// DLOCK_SLOW_FAULTS=1 in the environment.
package jobs
