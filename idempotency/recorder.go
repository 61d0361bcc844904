package idempotency

import (
	"context"
	"errors"
	"fmt"
	"net/http"
)

// recorder is the ResponseWriter a guarded handler writes to. It writes
// through to the client as the handler writes, so streamed and large
// responses flow as they would without the Middleware, and keeps a copy of
// the response, up to a limit, to store.
type recorder struct {
	w        http.ResponseWriter
	before   http.Header // the client's header before the handler ran
	limit    int         // the largest body kept
	status   int         // of the final response; 0 until it is written
	header   http.Header // as it was when the status was written
	body     []byte      // the copy, nil once it outgrew limit
	overflow bool        // the body outgrew limit
}

func newRecorder(w http.ResponseWriter, limit int) *recorder {
	return &recorder{w: w, before: w.Header().Clone(), limit: limit}
}

// discardHeader undoes what the handler did to the header of a response it
// did not write, so that the Middleware's own answer carries none of it.
func (r *recorder) discardHeader() {
	h := r.w.Header()
	clear(h)
	for name, values := range r.before {
		h[name] = values
	}
}

// Header returns the header of the response to the client.
func (r *recorder) Header() http.Header { return r.w.Header() }

// WriteHeader writes the status. Informational statuses (1xx) pass through
// without counting as the response's.
func (r *recorder) WriteHeader(code int) {
	if r.status == 0 && (code < 100 || code > 199 || code == http.StatusSwitchingProtocols) {
		r.status = code
		r.header = r.w.Header().Clone()
	}
	r.w.WriteHeader(code)
}

// Write writes to the client and keeps a copy.
func (r *recorder) Write(p []byte) (int, error) {
	if r.status == 0 {
		r.WriteHeader(http.StatusOK)
	}
	n, err := r.w.Write(p)
	if !r.overflow {
		if len(r.body)+n > r.limit {
			r.overflow, r.body = true, nil
		} else {
			r.body = append(r.body, p[:n]...)
		}
	}
	return n, err
}

// Flush sends what was written so far to the client.
func (r *recorder) Flush() {
	if r.status == 0 {
		r.WriteHeader(http.StatusOK)
	}
	_ = http.NewResponseController(r.w).Flush()
}

// Unwrap returns the client's ResponseWriter, for http.ResponseController.
func (r *recorder) Unwrap() http.ResponseWriter { return r.w }

// errPassedThrough means the handler's response reached the client but is
// not stored, and the key is free again.
var errPassedThrough = errors.New("idempotency: response passed through, not stored")

// errAbandoned means the handler wrote nothing and its context had ended:
// it gave up, and the client has no response yet. Nothing is stored, and
// the key is free again.
var errAbandoned = errors.New("idempotency: the handler wrote no response")

// result returns the stored form of the response the handler wrote, or an
// error if it is not to be stored: wrapping errPassedThrough for a server
// error, a "try again later" (408, 429), or a body over the limit; wrapping
// errAbandoned, and the context's cause, for nothing at all from a handler
// whose context ended (it gave up: the client went away, or the lock was
// lost).
func (r *recorder) result(ctx context.Context) ([]byte, error) {
	status, header := r.status, r.header
	if status == 0 && ctx.Err() != nil {
		return nil, fmt.Errorf("%w, and its context ended: %w", errAbandoned, context.Cause(ctx))
	}
	if status == 0 { // the handler wrote nothing: net/http sends 200
		status, header = http.StatusOK, r.w.Header()
	}
	switch {
	case status >= 500 || status == http.StatusRequestTimeout || status == http.StatusTooManyRequests:
		return nil, fmt.Errorf("%w: status %d", errPassedThrough, status)
	case r.overflow:
		return nil, fmt.Errorf("%w: %w: the body is larger than %d bytes", errPassedThrough, ErrTooLarge, r.limit)
	}
	return encodeResponse(status, storedHeader(header), trailers(header, r.w.Header()), r.body), nil
}
