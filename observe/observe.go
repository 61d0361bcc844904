// Package observe defines what a dlock.Client tells of itself and its
// locks, for metrics, traces and logs: the Observer it calls
// (dlock.WithObserver installs one), and the Events, with their types,
// results and reasons; and the PackageObserver that the packages built on
// a Client (cachefill, jobs, election, idempotency, stock) tell of
// themselves, with their PackageEvents. It stands beside package dlock as
// net/http/httptrace stands beside net/http: a program that does not
// observe does not need it. The modules github.com/dlock-go/dlock/prometheus
// and github.com/dlock-go/dlock/otel are Observers and PackageObservers.
package observe

import (
	"context"
	"fmt"
	"time"
)

// Observer is told what a Client and its locks do, for metrics, traces and
// logs: install one with dlock.WithObserver. The modules
// github.com/dlock-go/dlock/prometheus and github.com/dlock-go/dlock/otel
// are Observers.
//
// Observe is called synchronously, from the goroutine of the caller (for an
// Obtain, a Release, ...) or from one of the Client's own (for automatic
// refreshes, lost locks, node errors), possibly from many at once. It must
// be safe for concurrent use, fast, and must not block nor call the Client
// or its Locks: the renewer of every lock of the Client waits for it.
//
// One method taking an Event by value, rather than one method per kind of
// event, keeps the interface open: a kind of event added later is a new
// EventType that an existing Observer ignores, not a method it lacks. An
// Event passed by value costs no allocation, and a Client without an
// Observer builds none.
type Observer interface {
	Observe(e Event)
}

// ObserverFunc is a function used as an Observer.
type ObserverFunc func(e Event)

// Observe calls f(e).
func (f ObserverFunc) Observe(e Event) { f(e) }

// CallObserver is an Observer that is also told when a call starts, so that
// it can put something in the call's context (a tracing span, for
// instance) and find it again in the Event that ends the call.
//
// The Client calls StartCall as a call starts (after its arguments were
// checked) that obtains a hold (dlock.Client.Obtain and TryObtain,
// Semaphore.Acquire and TryAcquire, RWMutex.RLock, TryRLock, Lock and
// TryLock), runs a function under one (the Do methods), or releases or
// refreshes one (Lock.Release, ReleaseAfter, Refresh). It passes an Event
// of the Type that will end the call (EventObtain, EventDo, EventRelease,
// EventRefresh) with Kind, Key, Node and Context set; Context is the
// caller's. The call then runs under the
// context StartCall returns, and every Event of the call carries it. The
// returned context must be the caller's or derived from it. An obtain
// inside dlock.Client.Do starts its own call, under the context of the Do.
type CallObserver interface {
	Observer
	StartCall(e Event) context.Context
}

// EventType says what an Event tells of.
type EventType uint8

// The types of Event, and the fields each one sets beyond Type, Kind and
// Key (which every Event sets) and Context (which every Event of a call
// sets, see Event.Context).
const (
	// EventObtain ends an obtain of any kind of hold (Obtain, TryObtain,
	// Semaphore.Acquire, RWMutex.RLock, ..., and that of a Do): Result,
	// Err, Duration, Wait, Attempts, Woken, Handoff, Node.
	EventObtain EventType = iota + 1
	// EventWaitStart: an obtain found the lock held and starts to wait.
	// Exactly one EventWaitEnd follows, before its EventObtain.
	EventWaitStart
	// EventWaitEnd: the obtain stops waiting: Wait, Result.
	EventWaitEnd
	// EventHandoff: in fair mode (WithFair), a release handed the lock over
	// to this waiter, which holds it without another attempt. Its
	// EventObtain follows.
	EventHandoff
	// EventRelease ends a call of Release or ReleaseAfter, also Do's: Err,
	// Duration, Held, Ended, Node. It also ends a record (AsRecord) whose
	// validity ran out, as its holder meant: then Context is nil, Duration
	// 0, and Ended true.
	EventRelease
	// EventRefresh: a refresh answered, or failed: Err (nil when the lock
	// was extended), Auto, Duration (0 for automatic ones), Node.
	EventRefresh
	// EventLost: a lock the Client told obtained is not held any more,
	// other than by a release: Reason, Err, Held, Ended. A lock its holder
	// let expire on purpose (ReleaseAfter, WithMinHold, a record) is
	// released, not lost.
	EventLost
	// EventNodeError: an operation on one Redis node failed (a network
	// error, a timeout, an error reply): Node, Op, Err. It comes whether or
	// not the call failed: on a Redlock, a quorum may do without the node.
	// It comes once per failed operation, when the operation ends: a call
	// whose caller stopped waiting for it (its context ended, or a Redlock
	// round went on without the node) is told only if it then fails.
	EventNodeError
	// EventDo ends a call of a Do method (Client.Do, Semaphore.Do,
	// RWMutex.Do and RDo): Err (the function's error joined with the
	// hold's, or the obtain's), Duration.
	EventDo
)

var eventTypeNames = [...]string{
	EventObtain: "obtain", EventWaitStart: "wait-start", EventWaitEnd: "wait-end",
	EventHandoff: "handoff", EventRelease: "release", EventRefresh: "refresh",
	EventLost: "lost", EventNodeError: "node-error", EventDo: "do",
}

// String returns a lowercase name: "obtain", "wait-start", "wait-end",
// "handoff", "release", "refresh", "lost", "node-error", "do".
func (t EventType) String() string {
	if int(t) < len(eventTypeNames) && eventTypeNames[t] != "" {
		return eventTypeNames[t]
	}
	return fmt.Sprintf("EventType(%d)", uint8(t))
}

// ObtainResult is how an obtain ended.
type ObtainResult uint8

// How an obtain ends.
const (
	// ResultObtained: the lock is the caller's.
	ResultObtained ObtainResult = iota + 1
	// ResultHeld: another holder has it, and the caller did not wait
	// (TryObtain, TryAcquire, a Do WithoutWait). The error wraps
	// ErrNotObtained.
	ResultHeld
	// ResultTimedOut: the context's deadline passed first.
	ResultTimedOut
	// ResultCanceled: the context was canceled first.
	ResultCanceled
	// ResultFailed: Redis failed (down, an error reply, no quorum), or
	// the Client was closed.
	ResultFailed
)

var resultNames = [...]string{
	ResultObtained: "obtained", ResultHeld: "held", ResultTimedOut: "timeout", ResultCanceled: "canceled", ResultFailed: "error",
}

// String returns a label value: "obtained", "held", "timeout",
// "canceled", "error".
func (r ObtainResult) String() string {
	if int(r) < len(resultNames) && resultNames[r] != "" {
		return resultNames[r]
	}
	return fmt.Sprintf("ObtainResult(%d)", uint8(r))
}

// LostReason is why a lock was lost.
type LostReason uint8

// Why a lock is lost.
const (
	// LostNotHeld: a refresh, TTL or release found the key gone or
	// holding another token (it was deleted, or taken over after it
	// expired).
	LostNotHeld LostReason = iota + 1
	// LostExpired: its validity (Lock.Until) ran out: no refresh got
	// through in time (Redis slow, paused or down), or nobody refreshed
	// or released a lock obtained without WithAutoRenew (and without
	// AsRecord, which ends such a hold as released).
	LostExpired
	// LostClosed: the Client was closed while it renewed the lock.
	LostClosed
)

var reasonNames = [...]string{LostNotHeld: "not_held", LostExpired: "expired", LostClosed: "closed"}

// String returns a label value: "not_held", "expired", "closed".
func (r LostReason) String() string {
	if int(r) < len(reasonNames) && reasonNames[r] != "" {
		return reasonNames[r]
	}
	return fmt.Sprintf("LostReason(%d)", uint8(r))
}

// Event is what an Observer is told. Type says what happened, and which of
// the other fields are set (see the EventType constants); the others are
// zero. A lock, a semaphore's permit and an RW lock's read or write hold
// are all a Lock, and tell the same events.
type Event struct {
	Type EventType
	// Kind is the kind of hold: "lock" (Client.Obtain), "multi" (the locks
	// of several keys held as one, Client.ObtainMulti), "semaphore" (a
	// Semaphore's permit), "read" or "write" (an RWMutex's holds). It is
	// "" for EventNodeError: a node's failure is no hold's.
	Kind string
	// Key is the lock's key, as given to Obtain, the first of the sorted
	// keys of a multi-key lock, or the name of the Semaphore or RWMutex.
	// It is unbounded: do not use it as a metric label as it is.
	Key string
	// Context is the context of the call the Event belongs to (see
	// CallObserver): the caller's, or what StartCall made of it. It is nil
	// for events that no caller waits for: automatic refreshes, lost
	// locks, the end of a record that ran out, node errors.
	Context context.Context
	// Node names the Redis deployment (an address, or "cluster" and its
	// addresses) for a node error, and for the events of a call on a
	// Client made by New. It is "" for the calls of a Redlock Client.
	Node string
	// Op is the operation that failed on Node: "acquire", "release",
	// "refresh", ... as in NodeError.
	Op string
	// Err is the error of the call or the refresh, why the lock was lost,
	// or the node's error.
	Err error
	// Result is how an obtain ended.
	Result ObtainResult
	// Reason is why a lock was lost.
	Reason LostReason
	// Duration is how long the call took, from its start to its end.
	Duration time.Duration
	// Wait is how long an obtain waited: from the attempt that first found
	// the lock held to the end. It is 0 if it did not wait.
	Wait time.Duration
	// Held is how long the lock was held, from its obtain to the release
	// or the loss.
	Held time.Duration
	// Attempts is how many attempts an obtain made.
	Attempts int
	// Woken reports whether a release message woke the waiter before its
	// last attempt, rather than a timer.
	Woken bool
	// Handoff reports whether a release handed the lock over to the waiter
	// (WithFair).
	Handoff bool
	// Auto reports whether a refresh was sent by the Client's renewer
	// (WithAutoRenew, Client.Do) rather than by Lock.Refresh.
	Auto bool
	// Ended is true on the one event that ends a lock reported obtained,
	// and on no other: EventRelease with a nil Err, or EventLost. A gauge
	// of held locks counts EventObtain with Result ResultObtained up, and Ended
	// down.
	Ended bool
	// Record reports whether the hold is a record (AsRecord), a key its
	// holder keeps for its ttl and lets expire, rather than a lock that
	// guards work; every event of the hold says so, the start of its calls
	// too. Metrics of locks held and lost should leave records out, as the
	// Prometheus and OpenTelemetry modules do.
	Record bool
}
