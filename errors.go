package dlock

import (
	"errors"

	"github.com/dlock-go/dlock/internal/engine"
)

// Errors returned by this package. They are wrapped with the key and, for
// Redis failures, the node; test for them with errors.Is.
var (
	// ErrNotObtained means another holder has the lock. Obtain returns it,
	// joined with the context's error, when the context ends while it waits.
	ErrNotObtained = engine.ErrNotObtained

	// ErrNotHeld means the lock is no longer ours: it expired, was released,
	// or was deleted or taken over by someone else. Release and Refresh
	// return it and leave the key untouched.
	ErrNotHeld = engine.ErrNotHeld

	// ErrInvalidKey means the key is empty.
	ErrInvalidKey = engine.ErrInvalidKey

	// ErrInvalidTTL means a time to live under one millisecond, the
	// resolution of Redis expiry.
	ErrInvalidTTL = engine.ErrInvalidTTL

	// ErrWrongType means the key exists but holds something else than the
	// kind of hold asked for: a value of another Redis type (a hash, a
	// list, ...), or another kind of hold under the same name (a lock, a
	// semaphore, an RW lock). Nothing was changed.
	ErrWrongType = engine.ErrWrongType

	// ErrLimitMismatch means a semaphore's permits are held with another
	// limit than the one asked for: Clients that share a semaphore must
	// agree on its limit. Once every permit is released or expired, the
	// next acquire sets the limit anew.
	ErrLimitMismatch = engine.ErrLimitMismatch

	// ErrNilClient means New was given a nil Redis client.
	ErrNilClient = errors.New("dlock: nil redis client")

	// ErrNilFunc means Do (of a Client, a Semaphore or an RWMutex) was
	// given a nil function to run. Nothing was obtained.
	ErrNilFunc = errors.New("dlock: do: nil function")

	// ErrInvalidOption means an option was given a value it cannot use.
	ErrInvalidOption = engine.ErrInvalidOption

	// ErrClosed means the Client was closed.
	ErrClosed = engine.ErrClosed

	// ErrLockLost means a lock stopped being ours while we held it: a
	// refresh found it gone or taken, or its validity (Lock.Until) ran out
	// before a refresh got through. Lock.Err returns it once Lock.Done is
	// closed, and it is the cause of the context Client.Do gives its
	// function.
	ErrLockLost = engine.ErrLockLost

	// ErrNotReplicated means fewer replicas than WithReplicaAck asks for
	// acknowledged an acquire in time. The lock was released again.
	ErrNotReplicated = engine.ErrNotReplicated

	// ErrReleased is what Lock.Err returns after Release released the lock.
	ErrReleased = engine.ErrReleased

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
	ErrOutcomeUnknown = engine.ErrOutcomeUnknown
)

// NodeError is a failure to talk to one Redis deployment: a network error,
// a timeout, or an error reply. Err is what the client returned.
//
// Its fields: Node, the address of the node or a description of the
// deployment; Op, the operation ("acquire", "release", "refresh", "ttl",
// "inspect", "force-release", "scan", "check"); Key, the lock key, the
// pattern of a scan, or "" for a check; Err, what the Redis client
// returned. Error describes them, and Unwrap returns Err.
type NodeError = engine.NodeError

// QuorumError is the failure of a Redlock operation that did not get a
// quorum of answers: it says how the nodes voted, and holds each node's
// error (NodeError) for errors.Is and errors.As. An acquire that found the
// lock held is ErrNotObtained as long as the nodes that failed leave room
// for a quorum (at most N-Q of them); with more failed, it is a
// QuorumError, whatever the others said.
//
// Its fields: Op and Key as in NodeError; Nodes, how many nodes there
// are; Quorum, how many must agree; Granted, how many did (refresh only);
// Errs, the errors of the nodes that failed, which Unwrap returns.
type QuorumError = engine.QuorumError
