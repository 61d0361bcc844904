package election

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"

	"github.com/dlock-go/dlock"
	"github.com/dlock-go/dlock/internal/door"
	"github.com/dlock-go/dlock/observe"
)

// Election is one seat, named by its name, that candidates of every process
// campaign for through dlock Clients on the same Redis deployment. It is safe
// for concurrent use; make one per process and name.
type Election struct {
	locker *dlock.Client
	name   string
	cfg    config
	obs    observe.PackageObserver // locker's; nil without one
}

// Leader is who leads an election: the value the leader campaigned with,
// and its term. A zero Leader (Term 0) means nobody leads.
type Leader struct {
	Value string
	Term  int64
}

// New returns the election named name, on the Redis deployment of locker
// (made by dlock.New or dlock.NewRedlock). The seat is the lock named name:
// "dlock status name" shows it. The election also uses the key
// "dlock:vacancy:" followed by name (see Observe).
//
// The Election tells the observers of locker (dlock.WithObserver) that
// are observe.PackageObservers when a term of this process begins and
// ends (observe.OpTerm), and when an Observe of this process sees the seat
// change hands (observe.OpLeaderChange): the Prometheus and OpenTelemetry
// modules make of them a gauge of leadership per election, and counters.
//
// New does not talk to Redis. A nil locker, an empty name or an invalid
// option is no panic: New returns an error wrapping ErrInvalid, and no
// Election.
func New(locker *dlock.Client, name string, opts ...Option) (*Election, error) {
	switch {
	case locker == nil:
		return nil, fmt.Errorf("%w: nil dlock.Client", ErrInvalid)
	case name == "":
		return nil, fmt.Errorf("%w: empty election name", ErrInvalid)
	}
	cfg := config{ttl: DefaultTTL, logger: door.Logger(locker)}
	for _, opt := range opts {
		if opt == nil {
			return nil, fmt.Errorf("%w: nil Option", ErrInvalid)
		}
		if opt(&cfg); cfg.err != nil {
			return nil, cfg.err
		}
	}
	return &Election{locker: locker, name: name, cfg: cfg, obs: door.PackageObserver(locker)}, nil
}

// errNotNew is the error of every call of an Election that New did not make.
var errNotNew = fmt.Errorf("%w: an Election not made by New", ErrInvalid)

// usable returns errNotNew for an Election that New did not make.
func (e *Election) usable() error {
	if e == nil || e.locker == nil {
		return errNotNew
	}
	return nil
}

// Name returns the election's name, as given to New.
func (e *Election) Name() string { return e.name }

// Campaign blocks until this caller leads the election, and returns its
// Leadership, whose lease is renewed until it resigns or loses it. value is
// what Leader and Observe tell everyone about this leader, such as its
// address (at most dlock.MaxValueLen bytes).
//
// A candidate waits as dlock's Obtain waits for a lock: it is woken by the
// leader's resignation, or when the leader's lease runs out, not by polling.
// When ctx ends while another leads, the error matches
// dlock.ErrNotObtained and the context's error. An error of Redis ends
// Campaign at once, wrapped: errors.As finds the *dlock.NodeError (or
// *dlock.QuorumError), and errors.Is the network's error beneath it, or
// the context's error when ctx ended while Redis did not answer (paused,
// cut off). Lead retries those.
//
// Campaign takes the seat once, whatever go-redis resends: a request whose
// reply was lost (Redis paused, a connection cut) is sent again on another
// connection, and every copy runs; a copy that finds the seat taken by this
// caller's own request answers with the term that request wrote, so the
// caller leads once, in one term. A request whose reply comes after ctx
// ended is released again, so a campaign that gave up holds no seat.
// On a Redlock quorum that took the seat but agreed on no term, Campaign
// gives the seat up and campaigns again, and logs it (WithLogger).
func (e *Election) Campaign(ctx context.Context, value string) (*Leadership, error) {
	if err := e.usable(); err != nil {
		return nil, err
	}
	for {
		lock, err := e.locker.Obtain(ctx, e.name, e.cfg.ttl,
			dlock.WithAutoRenew(true),
			dlock.WithValue(value),
			dlock.WithBackoff(dlock.ExponentialBackoff(dlock.DefaultMinBackoff, max(dlock.DefaultMinBackoff, e.cfg.ttl))))
		if err != nil {
			return nil, fmt.Errorf("election %s: campaign: %w", strconv.Quote(e.name), err)
		}
		term := lock.Fence()
		if term == 0 {
			// No term: the lock was lost before Redis handed one out,
			// or a Redlock quorum could not agree on one (too many nodes
			// failed). Campaign again.
			e.log().Warn("election: the seat was taken without a term agreed by a quorum; campaigning again",
				slog.String("election", e.name))
			rctx, cancel := e.cleanupContext(ctx)
			_ = lock.Release(rctx)
			cancel()
			continue
		}
		e.announce(ctx)
		l := newLeadership(lock, term, value)
		if e.obs != nil {
			e.observeTerm(l)
		}
		return l, nil
	}
}

// Leader returns who leads the election now, or an error wrapping
// ErrNoLeader when nobody does. It is one round trip (dlock's Inspect).
// A candidate that just won counts from the moment its term is handed
// out, right after it took the seat (on a Redlock, once a quorum knows it).
func (e *Election) Leader(ctx context.Context) (Leader, error) {
	if err := e.usable(); err != nil {
		return Leader{}, err
	}
	info, err := e.locker.Inspect(ctx, e.name)
	if err != nil {
		return Leader{}, fmt.Errorf("election %s: %w", strconv.Quote(e.name), err)
	}
	l := leaderOf(info)
	if l.Term == 0 {
		return Leader{}, fmt.Errorf("%w in %s", ErrNoLeader, strconv.Quote(e.name))
	}
	return l, nil
}

func leaderOf(info dlock.LockInfo) Leader {
	if !info.Held || info.Fence == 0 {
		return Leader{}
	}
	return Leader{Value: info.Value(), Term: info.Fence}
}

// log returns the logger of WithLogger.
func (e *Election) log() *slog.Logger { return e.cfg.logger }

// vacancy is the lock that observers of an empty seat hold, and wait for:
// a new leader deletes it, which wakes them (see Observe).
func (e *Election) vacancy() string { return "dlock:vacancy:" + e.name }

// announce tells the observers of an empty seat that it is taken. Should
// it fail, they see the new leader when their hold on the vacancy runs out.
//
// A copy of it that go-redis resends may run later, after the seat emptied
// again and an observer held the vacancy anew: it wakes those observers,
// which look at the seat once more, see it empty, and wait again. So a
// resent copy costs a round trip per observer, never a missed leader.
func (e *Election) announce(ctx context.Context) {
	ctx, cancel := e.cleanupContext(ctx)
	defer cancel()
	_, _ = e.locker.ForceRelease(ctx, e.vacancy())
}

// cleanupContext returns a context for a call that must be made even if
// ctx has ended, such as a release: it ends after a lease at most.
func (e *Election) cleanupContext(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.WithoutCancel(ctx), e.cfg.ttl)
}

// observeTerm tells the Election's observer that l began, and, when l's
// lease ends (resigned, lost, or its Client closed), that it ended: from
// a function context.AfterFunc runs then, so no goroutine waits for it.
func (e *Election) observeTerm(l *Leadership) {
	e.observe(observe.OpTerm, observe.OutcomeWon)
	context.AfterFunc(door.Lifetime(l.lock), func() {
		outcome := observe.OutcomeLost
		if errors.Is(l.Err(), ErrResigned) {
			outcome = observe.OutcomeResigned
		}
		e.observe(observe.OpTerm, outcome)
	})
}

// observe tells the Election's observer of op and its outcome.
func (e *Election) observe(op, outcome string) {
	e.obs.ObservePackage(observe.PackageEvent{Package: observe.PackageElection, Op: op, Outcome: outcome, Name: e.name})
}
