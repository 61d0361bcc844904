package idempotency

import (
	"encoding/json"
	"net/http"
	"strconv"
)

// DefaultProblemType is the default base of the "type" of the problems the
// Middleware answers with: see WithProblemType.
const DefaultProblemType = "https://pkg.go.dev/github.com/dlock-go/dlock/idempotency"

// A problemKind is one kind of problem the Middleware answers with; its slug
// ends its "type" URI.
type problemKind struct {
	status int
	slug   string
	title  string
}

// The problems of the Middleware, listed in the package documentation.
var (
	problemMissingKey   = problemKind{http.StatusBadRequest, "missing-key", "Idempotency-Key is missing"}
	problemMalformedKey = problemKind{http.StatusBadRequest, "malformed-key", "Idempotency-Key is malformed"}
	problemUnreadable   = problemKind{http.StatusBadRequest, "unreadable-body", "The request body could not be read"}
	problemBodyTooLarge = problemKind{http.StatusRequestEntityTooLarge, "body-too-large", "The request body is too large"}
	problemKeyReused    = problemKind{http.StatusUnprocessableEntity, "key-reused", "Idempotency-Key is already used"}
	problemInProgress   = problemKind{http.StatusConflict, "in-progress", "A request is outstanding for this Idempotency-Key"}
	problemUnavailable  = problemKind{http.StatusServiceUnavailable, "unavailable", "The idempotency store is unavailable"}
	problemInterrupted  = problemKind{http.StatusServiceUnavailable, "interrupted", "The request was interrupted"}
	problemInternal     = problemKind{http.StatusInternalServerError, "internal", "The idempotency store failed"}
)

// problem is an RFC 9457 problem details object.
type problem struct {
	Type   string `json:"type"`
	Title  string `json:"title"`
	Status int    `json:"status"`
	Detail string `json:"detail,omitempty"`
}

// writeProblem answers with the problem kind, as application/problem+json.
// Problems are not cached; those a retry can get past (409, 503) say when
// to retry.
func writeProblem(w http.ResponseWriter, base string, kind problemKind, detail string) {
	body, _ := json.Marshal(problem{Type: base + "#" + kind.slug, Title: kind.title, Status: kind.status, Detail: detail})
	h := w.Header()
	h.Set("Content-Type", "application/problem+json")
	h.Set("Content-Length", strconv.Itoa(len(body)))
	h.Set("Cache-Control", "no-store")
	if kind.status == http.StatusConflict || kind.status == http.StatusServiceUnavailable {
		h.Set("Retry-After", "1")
	}
	w.WriteHeader(kind.status)
	_, _ = w.Write(body)
}
