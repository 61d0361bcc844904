package dlock

import (
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/dlock-go/dlock/internal/engine"
	"github.com/dlock-go/dlock/observe"
)

// Option configures a Client. Pass options to New.
type Option func(*clientConfig)

type clientConfig struct {
	holderName  string
	logger      *slog.Logger
	nodeTimeout time.Duration
	ack         engine.ReplicaAck
	observers   []observe.Observer // WithObserver
	err         error
}

func newClientConfig(opts []Option) (clientConfig, error) {
	cfg := clientConfig{logger: slog.Default(), nodeTimeout: DefaultNodeTimeout, holderName: defaultHolderName()}
	for _, opt := range opts {
		if opt == nil {
			return cfg, fmt.Errorf("%w: nil Option", ErrInvalidOption)
		}
		if opt(&cfg); cfg.err != nil {
			return cfg, cfg.err
		}
	}
	return cfg, nil
}

// WithReplicaAck makes an acquire wait until at least replicas replicas of
// the primary have acknowledged the lock (Redis WAIT), for at most timeout,
// before reporting it obtained, as Redisson does. If fewer acknowledge in
// time, the lock is released again and Obtain and TryObtain return an error
// wrapping ErrNotReplicated.
//
// This narrows the window in which a failover to a replica (Sentinel,
// Cluster) loses a lock that was just obtained; it does not close it, since
// Redis replication stays asynchronous and a failover may still promote a
// replica that missed the write (see docs/safety.md). It costs no extra
// round trip: the WAIT is pipelined with the acquire, on its connection.
// Refreshes and releases are not acknowledged. The default is no WAIT.
// replicas must be positive and timeout at least a millisecond.
func WithReplicaAck(replicas int, timeout time.Duration) Option {
	return func(c *clientConfig) {
		if replicas <= 0 || timeout < time.Millisecond {
			c.err = fmt.Errorf("%w: WithReplicaAck(%d, %v): want at least one replica and a timeout of at least 1ms", ErrInvalidOption, replicas, timeout)
			return
		}
		c.ack = engine.ReplicaAck{Replicas: replicas, Timeout: timeout}
	}
}

// DefaultNodeTimeout is how long a Redlock round waits for each node by
// default: see WithNodeTimeout.
const DefaultNodeTimeout = 100 * time.Millisecond

// WithNodeTimeout sets how long a Client made by NewRedlock waits for one
// node in each round (acquire, release, refresh, ...), so that a node that
// is slow, paused or cut off costs at most that much; it must be short
// compared to the ttls in use, since the time an acquire takes comes off
// the lock's validity. The default is DefaultNodeTimeout. A Client made by
// New ignores it: there, every call is bounded by its context.
func WithNodeTimeout(d time.Duration) Option {
	return func(c *clientConfig) {
		if d <= 0 {
			c.err = fmt.Errorf("%w: WithNodeTimeout(%v): must be positive", ErrInvalidOption, d)
			return
		}
		c.nodeTimeout = d
	}
}

// WithLogger sets where the Client reports what it cannot return to a caller,
// such as a failed clean-up of a lock whose acquire reply was lost, or a
// deployment setting that weakens locks (CheckDeployment). The default is
// slog.Default() as it is when New or NewRedlock is called; packages built
// on the Client (election) log there too unless told otherwise. To
// discard, pass slog.New(slog.DiscardHandler).
func WithLogger(l *slog.Logger) Option {
	return func(c *clientConfig) {
		if l == nil {
			c.err = fmt.Errorf("%w: WithLogger(nil)", ErrInvalidOption)
			return
		}
		c.logger = l
	}
}

// ObtainOption configures one call of Obtain or TryObtain, of the acquire
// methods of Semaphore and RWMutex, or of a Do method (it is a DoOption too).
type ObtainOption func(*obtainConfig)

// applyDo makes every ObtainOption a DoOption.
func (o ObtainOption) applyDo(c *obtainConfig) {
	if o == nil {
		c.err = fmt.Errorf("%w: nil ObtainOption", ErrInvalidOption)
		return
	}
	o(c)
}

type obtainConfig struct {
	engine.Config
	minHold time.Duration // WithMinHold; Do only
	err     error
}

// WithAutoRenew turns automatic renewal on or off. A renewed lock is
// refreshed for its ttl a third of the ttl after each acquire or refresh, by
// one goroutine of the Client that renews all its locks in batches (a
// pipeline per node). When a refresh finds the lock gone or taken, or none
// gets through before Until, the lock is lost: Lock.Done closes and Lock.Err
// says why. Renewal stops when the lock is released or lost, and when the
// Client is closed. The default is off for Obtain and TryObtain, on for
// Client.Do.
func WithAutoRenew(on bool) ObtainOption {
	return func(c *obtainConfig) { c.AutoRenew = on }
}

// WithBackoff sets how long Obtain sleeps between attempts while another
// holder has the lock. Obtain never sleeps past the holder's expiry, whatever
// the strategy says. The default is
// ExponentialBackoff(DefaultMinBackoff, DefaultMaxBackoff). TryObtain makes
// one attempt and ignores it.
func WithBackoff(b Backoff) ObtainOption {
	return func(c *obtainConfig) {
		if b == nil {
			c.err = fmt.Errorf("%w: WithBackoff(nil)", ErrInvalidOption)
			return
		}
		if v, ok := b.(interface{ validate() error }); ok {
			if err := v.validate(); err != nil {
				c.err = err
				return
			}
		}
		c.Backoff = b
	}
}

// AsRecord makes the hold a record rather than a lock: a key kept in Redis
// for its ttl, usually with a value (WithValue), that its holder means to
// let expire, such as the note the jobs package leaves that a job ran. A
// record is taken as a lock is, and nobody else takes its key until it
// expires or is released; but it guards no work, and its end is no loss:
//
//   - When its validity (Lock.Until) runs out, it ends as released: Done
//     closes and Err wraps ErrReleased. An observer is told so by an
//     observe.EventRelease with Ended set and no Context, and never an
//     observe.EventLost for running out.
//   - Every observe.Event of the hold has Record set, so that metrics keep records
//     apart from locks: the Prometheus and OpenTelemetry modules count
//     them under metrics of their own, neither as held nor as lost locks.
//   - An obtain whose outcome is unknown (ErrOutcomeUnknown: Redis did not
//     answer in time) is left as it is: a lock's would be taken back in the
//     background, but a record that landed is what its caller meant to
//     write, and it expires with its ttl.
//
// Release, ReleaseAfter, Refresh and TTL work on a record as on a lock.
// Nothing renews a record: with WithAutoRenew(true), and in the Do
// methods, which guard work, AsRecord is an error wrapping
// ErrInvalidOption. The default is a lock.
func AsRecord() ObtainOption {
	return func(c *obtainConfig) { c.Record = true }
}

var errRenewedRecord = fmt.Errorf("%w: AsRecord with auto-renew (WithAutoRenew(true), or a Do method): nothing renews a record", ErrInvalidOption)

// errRecordInDo is the error of a Do given AsRecord.
var errRecordInDo = fmt.Errorf("%w: AsRecord is for Obtain, TryObtain and the Acquire and Lock methods: Do guards work with a lock", ErrInvalidOption)

// WithFair makes Obtain wait its turn: waiters that use WithFair get the lock
// in the order they arrived, through a queue kept in Redis next to the lock
// (two side keys in the lock key's Cluster slot). A waiter arrives when it
// first finds the lock held; the first time a Client waits for any lock,
// one round trip later, once it listens for release messages.
//
// A release hands the lock over to the first waiter directly, in the same
// script, for the waiter's ttl but at most 2s; a waiter whose ttl is
// no longer than 2s then holds the lock without another round trip,
// and one with a longer ttl extends it with one. The message that tells it
// so goes to its Client alone, on a channel of the Client's own, so a busy
// lock does not wake every waiting process on each handoff.
//
// A waiter keeps its place by renewing a lease of 2s while it waits,
// which Obtain does on its own. One that gives up (its context ends) leaves
// the queue at once, passing the lock on if it was handed it. One that dies
// loses its place when its lease runs out, or, if a release handed it the
// lock first, holds that for at most 2s: either way it holds up the
// waiters behind it for at most about 2s.
//
// Fairness is among fair waiters. Obtain and TryObtain without WithFair
// may take the lock while it is free between a release and the first
// waiter's attempt, and then the first waiter waits for the next release,
// keeping its place. Waiters without WithFair join the same queue (see
// Obtain). Mutual exclusion holds for every mix of the two.
//
// TryObtain with WithFair takes the lock only if nobody waits in the queue
// for it, and does not join the queue.
func WithFair() ObtainOption {
	return func(c *obtainConfig) { c.Fair = true }
}

// defaultBackoff is immutable and safe to share.
var defaultBackoff = ExponentialBackoff(DefaultMinBackoff, DefaultMaxBackoff)

func newObtainConfig(opts []ObtainOption) (obtainConfig, error) {
	if len(opts) == 0 { // the common case, without the allocation below
		return obtainConfig{Config: engine.Config{Backoff: defaultBackoff}}, nil
	}
	cfg := obtainConfig{Config: engine.Config{Backoff: defaultBackoff}}
	for _, opt := range opts {
		if opt == nil {
			return cfg, fmt.Errorf("%w: nil ObtainOption", ErrInvalidOption)
		}
		opt(&cfg)
		if cfg.err != nil {
			return cfg, cfg.err
		}
	}
	if cfg.Record && cfg.AutoRenew {
		return cfg, errRenewedRecord
	}
	return cfg, nil
}

// DoOption configures one call of a Do method (Client.Do, Semaphore.Do,
// RWMutex.Do and RDo): any ObtainOption, or one that only Do takes
// (WithoutWait, WithMinHold). The latter are not ObtainOptions, so that
// Obtain(ctx, key, ttl, WithMinHold(d)) does not compile.
type DoOption interface {
	applyDo(*obtainConfig)
}

// doOnly is a DoOption that is not an ObtainOption.
type doOnly func(*obtainConfig)

func (o doOnly) applyDo(c *obtainConfig) { o(c) }

// WithoutWait makes a Do method make one attempt, as TryObtain does: when
// another holder has the lock, the error wraps ErrNotObtained at once, and
// the function does not run. Of several instances started together, only
// one runs it. The default is to wait, as Obtain does.
func WithoutWait() DoOption {
	return doOnly(func(c *obtainConfig) { c.NoWait = true })
}

// WithMinHold makes a Do method keep the lock until d after it was
// obtained, however soon its function returns (with an error, or by a
// panic, too): instead of releasing it, Do then stops renewing it and lets
// it expire at that time (Lock.ReleaseAfter). A job that every host starts
// at about the same time, from cron, runs once even if a host's clock is
// late by less than d, while a lock released when a fast job ends would be
// free for that host to run the job again. d must not be negative; the
// default is 0: Do releases the lock when its function returns. A Lock
// from Obtain keeps itself the same way with Lock.ReleaseAfter.
func WithMinHold(d time.Duration) DoOption {
	return doOnly(func(c *obtainConfig) {
		if d < 0 {
			c.err = fmt.Errorf("%w: WithMinHold(%v) needs a duration of 0 or more", ErrInvalidOption, d)
			return
		}
		c.minHold = d
	})
}

// doObtainOptions returns the options of a Do's obtain: renewed by
// default, then opts. A nil option stays nil, for newObtainConfig to refuse.
func doObtainOptions(opts []DoOption) []ObtainOption {
	all := make([]ObtainOption, 1, len(opts)+1)
	all[0] = WithAutoRenew(true)
	for _, o := range opts {
		if o == nil {
			all = append(all, nil)
			continue
		}
		all = append(all, o.applyDo)
	}
	return all
}

// MaxValueLen is the longest value WithValue takes, in bytes.
const MaxValueLen = 1024

// WithValue makes the lock carry v, a short value for whoever looks at it:
// Lock.Value returns it to the holder, and LockInfo.Value (from Inspect and
// Scan) to everyone else, such as the name or address of the holder. The
// value lives in the lock's key, next to the holder's random token (which
// is then the 128 random bits, a dot, and v with "%" and ":" escaped), so it
// is set, renewed and removed with the lock, on a single deployment as on a
// Redlock quorum, and it costs no round trip. It is sent with every refresh
// and release: keep it short. The default is no value; v may be at most
// MaxValueLen bytes, or Obtain returns ErrInvalidOption.
func WithValue(v string) ObtainOption {
	return func(c *obtainConfig) {
		if len(v) > MaxValueLen {
			c.err = fmt.Errorf("%w: WithValue of %d bytes, over MaxValueLen (%d)", ErrInvalidOption, len(v), MaxValueLen)
			return
		}
		c.ValueSuffix = engine.ValueSuffix(v)
	}
}

// Value returns the value the lock carries (see WithValue), or "" if none.
func (l *Lock) Value() string {
	_, value := engine.SplitToken(l.h.Token())
	return value
}

// MaxHolderNameLen is the longest name WithHolderName takes, in bytes.
const MaxHolderNameLen = 256

// WithHolderName names the holders of the Client's locks, semaphore
// permits and RW lock holds, for whoever looks at them: Inspect and Scan
// return it (LockInfo.HolderName), and dlock status and dlock list show
// it, as in "held by host-b pid 4121 (report) for 3m12s". The name lives
// in each holding's token in Redis, next to the random part, so it costs
// no round trip; it is sent with every refresh and release: keep it short.
//
// The default is the host name, the process id and the program's name, as
// in "host-b pid 4121 (report)". An empty name stores none. A name
// longer than MaxHolderNameLen is an error wrapping ErrInvalidOption.
func WithHolderName(name string) Option {
	return func(c *clientConfig) {
		if len(name) > MaxHolderNameLen {
			c.err = fmt.Errorf("%w: WithHolderName of %d bytes, over MaxHolderNameLen (%d)", ErrInvalidOption, len(name), MaxHolderNameLen)
			return
		}
		c.holderName = name
	}
}

// defaultHolderName returns the holder name of a Client made without
// WithHolderName.
func defaultHolderName() string {
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "unknown-host"
	}
	name := host + " pid " + strconv.Itoa(os.Getpid())
	if len(os.Args) > 0 && os.Args[0] != "" {
		name += " (" + filepath.Base(os.Args[0]) + ")"
	}
	return name[:min(len(name), MaxHolderNameLen)]
}

// withGuard is door.WithGuard: every attempt of the acquire looks at key
// first, in the same step, and does not take the lock while key exists.
func withGuard(key string) ObtainOption {
	return func(c *obtainConfig) { c.Guard = key }
}
