// Package dlockprom exports what dlock's locks do as Prometheus metrics.
//
// A Collector is both a prometheus.Collector, which the program registers,
// and an observe.Observer, which it installs on its dlock Clients with
// dlock.WithObserver:
//
//	metrics, err := dlockprom.New()
//	if err != nil {
//		log.Fatal(err)
//	}
//	prometheus.MustRegister(metrics)
//	locker := dlock.New(rdb, dlock.WithObserver(metrics))
//	defer locker.Close()
//
// The metrics, each but dlock_node_errors_total with the label kind, the
// kind of hold: "lock" (Client.Obtain), "semaphore" (a Semaphore's
// permits), "read" or "write" (an RWMutex's holds):
//
//	dlock_obtain_duration_seconds   histogram  how long obtains took, by result
//	                                           (obtained, held, timeout, canceled, error)
//	dlock_hold_duration_seconds     histogram  how long locks were held, to their release or loss
//	dlock_locks_held                gauge      locks obtained and not yet released or lost
//	dlock_waiters                   gauge      obtains waiting for a lock now
//	dlock_lost_total                counter    locks lost, by reason (not_held, expired, closed)
//	dlock_refresh_failures_total    counter    refreshes that failed (manual and automatic)
//	dlock_node_errors_total         counter    failed operations on a Redis node, by node and op
//	dlock_records_total             counter    obtains of records, by result
//
// A record (dlock.AsRecord) is a key that its holder keeps for its ttl and
// lets expire, such as the notes of the jobs package that a job ran, or
// the vacancy notes of the election package. It is no lock: its events
// count in dlock_records_total only, and neither in the locks held nor,
// when it runs out as meant, in the locks lost. A lock that its holder
// keeps after the work and lets expire (Lock.ReleaseAfter, dlock.WithMinHold)
// counts as released, not lost.
//
// The file alerts.yml next to this package holds alerting rules on these
// metrics, tested with promtool against the metrics of real runs: a lost
// lock pages; a job's run, a kept lock and an election do not.
//
// Lock keys are no label by default: a service can use any number of keys,
// and every distinct label value is a time series Prometheus keeps.
// WithKeyLabel adds a label key whose value a function of the user's makes
// from the lock key (for instance the part before the first ':'); the
// Collector admits at most WithMaxKeyLabels distinct values and counts the
// rest under "other", so the number of series stays bounded whatever the
// keys.
//
// The Collector keeps no goroutine and needs no Close. Observe is quick (a
// map look-up and an atomic add per event) and safe for concurrent use, as
// dlock asks of an Observer. One Collector may observe several Clients.
package dlockprom
