package idempotency

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"strconv"

	"github.com/dlock-go/dlock"
)

// ReplayHeader marks a response that the Middleware replayed from the store,
// with the value "true".
const ReplayHeader = "Idempotent-Replayed"

// Middleware returns a handler that guards next with idempotency keys, as
// the IETF draft "The Idempotency-Key HTTP Header Field" describes: a POST
// or PATCH request (see WithMethods) carries a key in its Idempotency-Key
// header, and next runs once per key, however often the request is sent.
//
//   - The first request with a key runs next, whose response goes to the
//     client as next writes it, and is stored: its status, its headers
//     (not the hop-by-hop ones), its body and its trailer fields (declared
//     in its Trailer header, or set with http.TrailerPrefix).
//   - A request with the key of a finished one gets the stored response,
//     with the header Idempotent-Replayed: true, and the trailer fields
//     that net/http sent after the body. One sent while the first
//     one runs gets 409 Conflict, or waits and gets the stored response
//     with WithWaitForInProgress. One with the same key and another
//     payload (see WithFingerprint) gets 422 Unprocessable Content.
//   - A request without a key gets 400 (unless WithOptionalKey), and so
//     does one with a malformed key: not a quoted string (see
//     WithBareKeys), empty, longer than MaxKeyLength, or sent twice.
//   - A server error (5xx), 408, 429, a response larger than
//     WithMaxResult, a panic of next, or no response at all from a next
//     whose context ended is not stored, and the key is free again, so the
//     client can retry. For no response, the client gets 503 with
//     Retry-After (the problem "interrupted"), not net/http's empty 200:
//     next gave up because the key's lock was lost, or the client went
//     away.
//   - When Redis fails before next would run, the request gets 503 and next
//     does not run, unless WithFailOpen.
//
// The Middleware's own answers are application/problem+json (RFC 9457),
// with a "type" of WithProblemType. The context of the request that next
// gets is cancelled if the key's lock is lost while next runs.
func (s *Store) Middleware(next http.Handler, opts ...MiddlewareOption) http.Handler {
	cfg := newMiddlewareConfig(opts)
	if cfg.err == nil && next == nil {
		cfg.invalid("Middleware with a nil handler")
	}
	if cfg.err == nil && (s == nil || s.locker == nil) {
		cfg.err = errNotNew
	}
	if cfg.err != nil {
		logger := slog.New(slog.DiscardHandler)
		if s != nil && s.cfg.logger != nil {
			logger = s.cfg.logger
		}
		logger.Error("idempotency: the middleware answers every guarded request with 500", "error", cfg.err)
	}
	return &middleware{s: s, next: next, cfg: cfg}
}

type middleware struct {
	s    *Store
	next http.Handler
	cfg  middlewareConfig
}

func (m *middleware) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if !m.cfg.guards(r.Method) {
		m.next.ServeHTTP(w, r)
		return
	}
	if m.cfg.err != nil {
		m.problem(w, problemInternal, "The idempotency middleware is misconfigured.")
		return
	}
	key, err := parseKey(r.Header.Values(KeyHeader), m.cfg.bare)
	switch {
	case errors.Is(err, errNoKey) && m.cfg.optional:
		m.next.ServeHTTP(w, r)
		return
	case errors.Is(err, errNoKey):
		m.problem(w, problemMissingKey, "This operation requires an "+KeyHeader+" header, such as "+KeyHeader+`: "8e03978e-40d5-43e8-bc93-6894a57f9324".`)
		return
	case err != nil:
		m.problem(w, problemMalformedKey, err.Error()+".")
		return
	}
	scope := m.cfg.scope(r)
	body, ok := m.readBody(w, r)
	if !ok {
		return
	}
	c := call{s: m.s, key: scopedKey(scope, key), digest: sha256.Sum256(m.cfg.fingerprint(r, body))}
	if m.cfg.wait {
		c.wait = m.s.cfg.wait
	}
	rec := newRecorder(w, m.s.cfg.maxResult)
	o := c.do(r.Context(), func(ctx context.Context) ([]byte, error) {
		m.next.ServeHTTP(rec, r.WithContext(ctx))
		return rec.result(ctx)
	})
	m.answer(w, r, rec, o)
}

// scopedKey returns the Store's key of a request's key in a scope; the
// length of the scope keeps every pair apart.
func scopedKey(scope, key string) string {
	return strconv.Itoa(len(scope)) + ":" + scope + key
}

// readBody reads the request's body, to fingerprint it, and puts it back for
// the handler. If it cannot, it answers the request and reports false.
func (m *middleware) readBody(w http.ResponseWriter, r *http.Request) ([]byte, bool) {
	if r.Body == nil || r.Body == http.NoBody {
		return nil, true
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, m.cfg.maxBody+1))
	switch {
	case err != nil:
		m.problem(w, problemUnreadable, "The request body could not be read: "+err.Error()+".")
		return nil, false
	case int64(len(body)) > m.cfg.maxBody:
		m.problem(w, problemBodyTooLarge, "A request with an "+KeyHeader+" may have a body of at most "+strconv.FormatInt(m.cfg.maxBody, 10)+" bytes.")
		return nil, false
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	r.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(body)), nil }
	return body, true
}

// answer finishes a request after the call: the handler's response is
// already written if it ran and wrote one.
func (m *middleware) answer(w http.ResponseWriter, r *http.Request, rec *recorder, o outcome) {
	log := m.s.cfg.logger
	switch {
	case o.replayed:
		m.replay(w, o.result)
	case o.ran && errors.Is(o.err, errAbandoned):
		// The handler gave up without a response: net/http would send 200.
		if errors.Is(o.err, dlock.ErrLockLost) {
			log.Warn("idempotency: the key's lock was lost and the handler stopped without a response; the client gets 503",
				"method", r.Method, "path", r.URL.Path, "error", o.err)
		}
		rec.discardHeader()
		m.problem(w, problemInterrupted, "The request was interrupted before it produced a response, and no response is kept for its "+KeyHeader+"; retry later with the same key.")
	case o.ran:
		switch {
		case errors.Is(o.err, ErrTooLarge):
			log.Warn("idempotency: a response too large to store went to the client; its key is free again",
				"method", r.Method, "path", r.URL.Path, "error", o.err)
		case errors.Is(o.err, ErrNotStored):
			log.Warn("idempotency: a response could not be stored; a retry runs the handler again",
				"method", r.Method, "path", r.URL.Path, "error", o.err)
		case errors.Is(o.err, ErrMaybeStored):
			log.Warn("idempotency: whether a response was stored is unknown, as Redis did not answer; a retry gets it, or runs the handler again",
				"method", r.Method, "path", r.URL.Path, "error", o.err)
		}
	case errors.Is(o.err, ErrInProgress):
		m.problem(w, problemInProgress, "A request with the same "+KeyHeader+" is being processed; retry later.")
	case errors.Is(o.err, ErrMismatch):
		m.problem(w, problemKeyReused, "This "+KeyHeader+" was used with another request; a key must not be reused with a different payload.")
	case errors.Is(o.err, ErrUnavailable) && m.cfg.failOpen:
		log.Warn("idempotency: redis failed; the handler runs unprotected (WithFailOpen)",
			"method", r.Method, "path", r.URL.Path, "error", o.err)
		m.next.ServeHTTP(w, r)
	case errors.Is(o.err, ErrUnavailable), errors.Is(o.err, ErrClosed), r.Context().Err() != nil:
		m.problem(w, problemUnavailable, "The request was not processed: its "+KeyHeader+" could not be checked. Retry later.")
	default:
		log.Error("idempotency: a request failed", "method", r.Method, "path", r.URL.Path, "error", o.err)
		m.problem(w, problemInternal, "The request was not processed.")
	}
}

// replay writes a stored response.
func (m *middleware) replay(w http.ResponseWriter, stored []byte) {
	resp, err := decodeResponse(stored)
	if err != nil {
		m.s.cfg.logger.Error("idempotency: cannot replay a stored response", "error", err)
		m.problem(w, problemInternal, "The stored response for this "+KeyHeader+" cannot be read.")
		return
	}
	h := w.Header()
	for name, values := range resp.header {
		h[name] = values
	}
	h.Set(ReplayHeader, "true")
	w.WriteHeader(resp.status)
	_, _ = w.Write(resp.body)
	if resp.trailer == nil {
		return
	}
	// The trailer fields as they were sent, all through TrailerPrefix: a
	// declared field's value in the header, sent already, must not be
	// sent again as a trailer. The flush keeps net/http from sending the
	// body with a Content-Length, which leaves no room for trailers.
	_ = http.NewResponseController(w).Flush()
	for _, name := range declared(resp.header) {
		delete(h, name)
	}
	for name, values := range resp.trailer {
		h[http.TrailerPrefix+name] = values
	}
}

func (m *middleware) problem(w http.ResponseWriter, kind problemKind, detail string) {
	writeProblem(w, m.cfg.problemType, kind, detail)
}
