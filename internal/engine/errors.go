package engine

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// Errors of package dlock, which re-exports them. They are wrapped with the key and, for
// Redis failures, the node; test for them with errors.Is.
var (
	// ErrNotObtained means another holder has the lock. Obtain returns it,
	// joined with the context's error, when the context ends while it waits.
	ErrNotObtained = errors.New("dlock: not obtained")

	// ErrNotHeld means the lock is no longer ours: it expired, was released,
	// or was deleted or taken over by someone else. Release and Refresh
	// return it and leave the key untouched.
	ErrNotHeld = errors.New("dlock: not held")

	// ErrInvalidKey means the key is empty.
	ErrInvalidKey = errors.New("dlock: invalid key")

	// ErrInvalidTTL means a time to live under one millisecond, the
	// resolution of Redis expiry.
	ErrInvalidTTL = errors.New("dlock: invalid ttl")

	// ErrWrongType means the key exists but holds something else than the
	// kind of hold asked for: a value of another Redis type (a hash, a
	// list, ...), or another kind of hold under the same name (a lock, a
	// semaphore, an RW lock). Nothing was changed.
	ErrWrongType = errors.New("dlock: key holds another type")

	// ErrLimitMismatch means a semaphore's permits are held with another
	// limit than the one asked for: Clients that share a semaphore must
	// agree on its limit. Once every permit is released or expired, the
	// next acquire sets the limit anew.
	ErrLimitMismatch = errors.New("dlock: semaphore limit mismatch")

	// ErrNilClient means New was given a nil Redis client.
	ErrNilClient = errors.New("dlock: nil redis client")

	// ErrNilFunc means Do (of a Client, a Semaphore or an RWMutex) was
	// given a nil function to run. Nothing was obtained.
	ErrNilFunc = errors.New("dlock: do: nil function")

	// ErrInvalidOption means an option was given a value it cannot use.
	ErrInvalidOption = errors.New("dlock: invalid option")

	// ErrClosed means the Client was closed.
	ErrClosed = errors.New("dlock: client closed")

	// ErrLockLost means a lock stopped being ours while we held it: a
	// refresh found it gone or taken, or its validity (Lock.Until) ran out
	// before a refresh got through. Lock.Err returns it once Lock.Done is
	// closed, and it is the cause of the context Client.Do gives its
	// function.
	ErrLockLost = errors.New("dlock: lock lost")

	// ErrNotReplicated means fewer replicas than WithReplicaAck asks for
	// acknowledged an acquire in time. The lock was released again.
	ErrNotReplicated = errors.New("dlock: not acknowledged by enough replicas")

	// ErrReleased is what Lock.Err returns after Release released the lock.
	ErrReleased = errors.New("dlock: lock released")

	// ErrOutcomeUnknown means a call went to Redis but its answer did not
	// come back: the context ended first (the call goes on in the
	// background), or the Redis client gave up waiting (a timeout, a
	// connection closed after the command was sent). The call then had
	// its effect once, or not at all; never twice. An acquire that may
	// have taken the lock is released in the background. After a Release
	// or Refresh that returns it, the Lock stays as it was:
	// calling it again is safe, and answers for both calls (a Release that
	// finds the first one released the lock returns ErrNotHeld, and Err
	// then wraps ErrReleased). Every error that matches it also matches
	// the failure or the context's error.
	ErrOutcomeUnknown = errors.New("dlock: outcome unknown")
)

// NodeError is a failure to talk to one Redis deployment: a network error,
// a timeout, or an error reply. Err is what the client returned.
type NodeError struct {
	Node string // the address of the node, or a description of the deployment
	Op   string // "acquire", "release", "refresh", "ttl", "inspect", "force-release", "scan", "check"
	Key  string // the lock key, the pattern of a scan, or "" for a check
	Err  error
}

// Error describes the failed operation, the key if any, and the node.
func (e *NodeError) Error() string {
	if e.Key == "" {
		return fmt.Sprintf("dlock: %s on %s: %v", e.Op, e.Node, e.Err)
	}
	return fmt.Sprintf("dlock: %s %s on %s: %v", e.Op, QuoteKey(e.Key), e.Node, e.Err)
}

// Unwrap returns the underlying error.
func (e *NodeError) Unwrap() error { return e.Err }

// maxQuotedKey is how much of a key error messages show.
const maxQuotedKey = 64

// QuoteKey quotes a key for an error message, shortened if it is long, so a
// one-megabyte key does not become a one-megabyte message.
func QuoteKey(key string) string {
	if len(key) <= maxQuotedKey {
		return strconv.Quote(key)
	}
	return strconv.Quote(key[:maxQuotedKey]) + "... (" + strconv.Itoa(len(key)) + " bytes)"
}

// QuorumError is the failure of a Redlock operation that did not get a
// quorum of answers: it says how the nodes voted, and holds each node's
// error (NodeError) for errors.Is and errors.As. An acquire that found the
// lock held is ErrNotObtained as long as the nodes that failed leave room
// for a quorum (at most N-Q of them); with more failed, it is a
// QuorumError, whatever the others said.
type QuorumError struct {
	Op      string // "acquire", "release", "refresh", "ttl", "inspect", "force-release"
	Key     string
	Nodes   int // how many nodes there are
	Quorum  int // how many must agree
	Granted int // how many did (refresh only; see the message otherwise)
	Errs    []error
	summary string
}

// Error says how the nodes voted, and why the failed ones failed.
func (e *QuorumError) Error() string {
	summary := e.summary
	if summary == "" {
		summary = fmt.Sprintf("%d of %d nodes agreed, %d needed", e.Granted, e.Nodes, e.Quorum)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "dlock: %s %s on a Redlock quorum: %s", e.Op, QuoteKey(e.Key), summary)
	for i, err := range e.Errs {
		if i == 0 {
			b.WriteString(": ")
		} else {
			b.WriteString("; ")
		}
		b.WriteString(err.Error())
	}
	return b.String()
}

// Unwrap returns the errors of the nodes that failed.
func (e *QuorumError) Unwrap() []error { return e.Errs }
