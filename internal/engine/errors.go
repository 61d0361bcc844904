package engine

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/dlock-go/dlock/internal/ctxerr"
)

// The errors of the Engine's calls. Package dlock re-exports each, and
// documents it there; the messages start with "dlock:", which is what a
// caller sees.
var (
	ErrNotObtained    = errors.New("dlock: not obtained")
	ErrNotHeld        = errors.New("dlock: not held")
	ErrInvalidKey     = errors.New("dlock: invalid key")
	ErrInvalidTTL     = errors.New("dlock: invalid ttl")
	ErrWrongType      = errors.New("dlock: key holds another type")
	ErrLimitMismatch  = errors.New("dlock: semaphore limit mismatch")
	ErrInvalidOption  = errors.New("dlock: invalid option")
	ErrClosed         = errors.New("dlock: client closed")
	ErrLockLost       = errors.New("dlock: lock lost")
	ErrNotReplicated  = errors.New("dlock: not acknowledged by enough replicas")
	ErrReleased       = errors.New("dlock: lock released")
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

// noAnswerError is the error of a call whose context ended before Redis
// answered. The call goes on in the background; an acquire that lands is
// released. errors.Is finds in it ErrOutcomeUnknown, the context's error
// and, if the node was failing (see node.failing), the failure's error.
type noAnswerError struct {
	err     error // the context's
	failing error // the node's failure, or nil
}

func (e *noAnswerError) Error() string {
	if e.failing == nil {
		return "no answer before the context ended: " + e.err.Error()
	}
	return "no answer before the context ended: " + e.err.Error() + "; " + e.failing.Error()
}

// Is reports whether target is ErrOutcomeUnknown: the call goes on, and
// what it does is not known yet.
func (e *noAnswerError) Is(target error) bool { return target == ErrOutcomeUnknown }

func (e *noAnswerError) Unwrap() []error {
	if e.failing == nil {
		return []error{e.err}
	}
	return []error{e.err, e.failing}
}

// contextError returns the error of a done context in which errors.Is finds
// both ctx.Err() and the cause given to a CancelCauseFunc, if any.
func contextError(ctx context.Context) error { return ctxerr.Of(ctx) }
