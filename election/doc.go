// Package election elects one leader among processes, on the Redis
// deployment of a dlock Client: active/standby services, a single
// scheduler, a single consumer.
//
//	e, err := election.New(locker, "billing-scheduler")
//	if err != nil {
//		return err // an empty name or an invalid option: election.ErrInvalid
//	}
//	err = election.Lead(ctx, e, hostname, func(ctx context.Context) error {
//		return schedule(ctx) // runs on one process at a time; ctx ends on loss
//	})
//
// Campaign, Resign, Leader and Observe are the pieces Lead is made of, as
// in etcd's concurrency.Election: Campaign blocks until the caller leads
// and returns its Leadership, whose Done, Err and Context tell when it ends,
// and whose Term is a fencing token.
//
// # Guarantees
//
//   - One leader at a time, as long as Redis keeps its data: the seat is a
//     dlock lock named after the election, renewed in the background, so
//     leaderships that Redis grants never overlap, and each ends (Done) at
//     the latest when its lease runs out without renewal.
//   - Terms strictly increase per election, across leaders, across the
//     seat's expiry, and across a restart of Redis without persistence
//     (they are the lock's fences; see dlock.Lock.Fence). A resource that
//     refuses terms lower than the highest it has seen refuses a leader
//     that lost its seat without knowing it (a paused process).
//   - Takeover without polling: Resign wakes a waiting candidate at once;
//     a leader that dies is replaced when its lease runs out (WithTTL).
//   - Leader and Observe read the seat and the leader's value in one round
//     trip each (the value travels in the lock, dlock.WithValue); Observe
//     is pushed by releases, and by the next leader's word while the seat
//     is empty.
//   - It works on a single Redis (also Sentinel and Cluster) and on a
//     Redlock quorum (dlock.NewRedlock), where a minority of nodes may be
//     down.
//
// # Metrics
//
// An Election tells the observers of its Client (dlock.WithObserver) that
// are observe.PackageObservers when a term of this process begins (won)
// and ends (resigned, or lost, also by the Client's Close), and when an
// Observe of this process sees the seat change hands. The end of a term
// is told when the lease ends, by a function context.AfterFunc runs then;
// nothing waits for it before. The Prometheus and OpenTelemetry modules make of them
// a gauge of leadership per election, and counters. Without such an
// observer nothing is built.
//
// # Failure modes
//
// Leadership is a lease. A leader that is paused (garbage collection, a
// stopped VM) for longer than the lease comes back still believing it
// leads until its next renewal fails, while another has been elected: use
// Term to fence what it writes. A leader cut off from Redis loses the seat
// when its lease runs out, and learns it then (Done). Redis itself can lose
// the seat (a restart without persistence, a failover to a replica that
// missed it; see dlock's docs/safety.md): two leaders may then overlap,
// with different terms. A leader whose dlock Client is closed loses its
// leadership at once, but the seat stays taken until its lease runs out.
//
// Redis down or paused: Campaign returns the error of Redis at once, wrapped
// (errors.As finds the *dlock.NodeError, errors.Is the network's error).
// Lead retries it, after a pause that grows up to a lease, and logs each
// failure with its error through the dlock Client's logger
// (dlock.WithLogger, default slog.Default(); WithLogger overrides it); when
// its deadline passes, its error wraps the deadline and the last failure of
// Redis. Cancelling Lead's context is a shutdown: Lead resigns and returns
// nil.
//
// Every call has one effect, whatever go-redis resends: it sends a command
// again, on another connection, when its reply did not come within its
// ReadTimeout (5 s by default; MaxRetries times), and every copy runs once
// Redis answers. A resent campaign finds the seat taken by its own first
// copy and leads in the term that copy wrote; a campaign that gave up
// (ctx ended) releases a seat that its late copy took; a resent
// announcement to the observers of an empty seat wakes them once more at
// most; Resign's release never releases a seat that is not this leader's,
// and an error of Redis leaves its outcome unknown (see Leadership.Resign).
//
// # Slow fault tests
//
// The tests that pause Redis for about 7 s while a call is in flight, with
// go-redis's default options, run one per package by default; set
// DLOCK_SLOW_FAULTS=1 to run them all.
package election
