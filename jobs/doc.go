// Package jobs runs a job at most once per schedule slot across hosts: the
// cron entry deployed on every host, of which one must do the work.
//
//	runner := jobs.New(locker) // one per process
//	slot := jobs.Slot(time.Now(), 24*time.Hour)
//	outcome, err := runner.Run(ctx, "nightly-report", slot, report)
//	// outcome: jobs.Ran here, or AlreadyDone, RunningElsewhere, ...
//
// The naive lock (take it, run, release it) runs a fast job twice when a
// host's clock is late: its cron fires after the others released the lock.
// A Runner keys the run by its slot, and a successful run leaves a done
// record for the slot, which later and late hosts find and skip.
//
// # Guarantees
//
//   - One run at a time per job and slot: the run holds a dlock lock of the
//     slot, renewed while it runs; its function's context is cancelled if
//     the lock is lost.
//   - Once per slot: after a success, no Run of the same slot runs the job
//     again while the done record lives: RetentionPeriods periods given
//     WithPeriod, else a day, or as WithRetention says.
//     Hosts agree on the slot as long as their clocks differ from the true
//     time by less than half the period (see Slot).
//   - Failures are recorded (an error, a panic, a lost lease, a host that
//     died while it ran), and a slot is tried again on the next Run of any
//     host, up to WithAttempts attempts in all (one by default).
//   - History shows the recent attempts of a job: slot, host, start, end,
//     status, error.
//   - It works on a single Redis (also Sentinel and Cluster) and on a
//     Redlock quorum; every record is a dlock lock with a value
//     (dlock.WithValue), so it needs no other key type, and expires.
//
// # Failure modes
//
// A run is a lease: a host that is paused longer than the lease (WithTTL)
// while it runs may resume after another host took over the slot; fence
// what the job writes if that matters (the run's lock is
// "dlock:job:NAME@SLOT/run"). Redis can lose the records (a restart without
// persistence, a failover): a slot may then run again. A job that succeeded
// but whose done record could not be written (Redis failed at that moment)
// is reported with the error, and may run again.
package jobs
