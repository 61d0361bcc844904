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
// kind of hold: "lock" (Client.Obtain), "multi" (Client.ObtainMulti's locks
// of several keys, held as one), "semaphore" (a Semaphore's permits),
// "read" or "write" (an RWMutex's holds):
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
// The Collector is also an observe.PackageObserver: the packages
// cachefill, jobs, election and idempotency, built on a Client it
// observes, tell it what they do, and packages stock and fence do when
// given it with their WithObserver (stock.New(rdb,
// stock.WithObserver(metrics)), fence.NewRedis(rdb,
// fence.WithObserver(metrics)), fence.Guard(…, fence.WithObserver(metrics))).
// Their metrics, whose label outcome takes the values of observe's Outcome
// constants:
//
//	dlock_cachefill_lookups_total          counter    entries read, by outcome: hit, stale, miss
//	dlock_cachefill_waits_total            counter    misses that waited for another caller's load
//	dlock_cachefill_load_duration_seconds  histogram  loads, by op (load, refresh) and outcome:
//	                                                  stored, not_found, failed, not_stored
//	dlock_cachefill_fallbacks_total        counter    loads made directly, Redis failing (WithFallback)
//	dlock_cachefill_gave_up_total          counter    loaders that stored nothing, handing the load on
//	dlock_jobs_runs_total                  counter    runs, by job_name and outcome: ran, failed,
//	                                                  already_done, running_elsewhere, no_attempts_left, error
//	dlock_jobs_run_duration_seconds        histogram  runs made here, by job_name and outcome (ran, failed)
//	dlock_election_leader                  gauge      1 while this process leads, by election
//	dlock_election_terms_total             counter    terms, by election and outcome: won, resigned, lost
//	dlock_election_leader_changes_total    counter    changes of leader that Observe saw, by election
//	dlock_idempotency_calls_total          counter    calls and requests, by outcome: stored, replayed,
//	                                                  in_progress (409), mismatch (422), failed,
//	                                                  interrupted, not_stored, error
//	dlock_stock_operations_total           counter    calls, by op (reserve, commit, cancel) and outcome:
//	                                                  ok, sold_out, conflict, no_reservation,
//	                                                  unknown_sku, unknown, error
//	dlock_fence_writes_total               counter    writes with a fence, by op (guard, redis_write) and
//	                                                  outcome: written, stale, failed, error
//
// The names of jobs and elections are labels (job_name, since Prometheus
// sets job to the scrape's job): at most WithMaxNameLabels distinct ones,
// the rest "other". Cache keys, idempotency keys and skus never are. A
// Client without a Collector costs the packages nothing: they build no
// event.
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
// lock pages; a job's run, a kept lock and an election do not, and an
// election left without a leader for 10 minutes warns. The file
// dashboard.json is a Grafana dashboard of every metric above, core and
// packages (see docs/operating.md to import it). A test checks that every
// metric name the two use is in a scrape of a real run.
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
