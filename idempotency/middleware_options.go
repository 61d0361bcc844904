package idempotency

import (
	"crypto/sha256"
	"fmt"
	"net/http"
	"strings"
)

// DefaultMaxBody is the largest request body the Middleware reads to
// fingerprint a request: see WithMaxBody.
const DefaultMaxBody = 1 << 20

// MiddlewareOption configures a Middleware.
type MiddlewareOption func(*middlewareConfig)

type middlewareConfig struct {
	methods     []string
	bare        bool
	optional    bool
	fingerprint func(r *http.Request, body []byte) []byte
	custom      bool // WithFingerprint
	ignoreQuery bool // WithQueryIgnored
	scope       func(r *http.Request) string
	wait        bool
	problemType string
	failOpen    bool
	maxBody     int64
	err         error
}

func newMiddlewareConfig(opts []MiddlewareOption) middlewareConfig {
	c := middlewareConfig{
		methods:     []string{http.MethodPost, http.MethodPatch},
		fingerprint: DefaultFingerprint,
		scope:       func(*http.Request) string { return "" },
		problemType: DefaultProblemType,
		maxBody:     DefaultMaxBody,
	}
	for _, opt := range opts {
		if opt == nil {
			c.err = fmt.Errorf("%w: nil MiddlewareOption", ErrInvalidOption)
			break
		}
		if opt(&c); c.err != nil {
			break
		}
	}
	if c.err == nil && c.custom && c.ignoreQuery {
		c.invalid("WithQueryIgnored with WithFingerprint: the fingerprint function alone decides what it covers")
	}
	return c
}

func (c *middlewareConfig) invalid(format string, args ...any) {
	c.err = fmt.Errorf("%w: "+format, append([]any{ErrInvalidOption}, args...)...)
}

// guards reports whether requests with the method need a key.
func (c *middlewareConfig) guards(method string) bool {
	for _, m := range c.methods {
		if m == method {
			return true
		}
	}
	return false
}

// DefaultFingerprint is the fingerprint of a request unless WithFingerprint
// or WithQueryIgnored says otherwise: a digest of its method, its path, its
// query string and its body. Two requests with the same key and different
// fingerprints get 422, so /pay?amount=10 and /pay?amount=99 are two
// payloads. The query string is taken as sent: the same parameters in
// another order are another fingerprint.
func DefaultFingerprint(r *http.Request, body []byte) []byte {
	return fingerprint(r, body, true)
}

// fingerprintWithoutQuery is the fingerprint of WithQueryIgnored.
func fingerprintWithoutQuery(r *http.Request, body []byte) []byte {
	return fingerprint(r, body, false)
}

// fingerprint digests the method, the path, the query string if withQuery
// and there is one, and the body. The path is escaped, so it holds no '?':
// path and query cannot be told for another path. A request without a
// query string has the fingerprint it had when the query was left out.
func fingerprint(r *http.Request, body []byte, withQuery bool) []byte {
	h := sha256.New()
	h.Write([]byte(r.Method))
	h.Write([]byte{0})
	h.Write([]byte(r.URL.EscapedPath()))
	if withQuery && r.URL.RawQuery != "" {
		h.Write([]byte{'?'})
		h.Write([]byte(r.URL.RawQuery))
	}
	h.Write([]byte{0})
	h.Write(body)
	return h.Sum(nil)
}

// WithMethods sets the request methods the Middleware guards; requests with
// other methods go to the handler untouched. The default is POST and PATCH,
// the methods that are not idempotent.
func WithMethods(methods ...string) MiddlewareOption {
	return func(c *middlewareConfig) {
		if len(methods) == 0 {
			c.invalid("WithMethods(): name at least one method")
			return
		}
		c.methods = make([]string, len(methods))
		for i, m := range methods {
			c.methods[i] = strings.ToUpper(m)
		}
	}
}

// WithBareKeys makes the Middleware also accept keys that are not quoted,
// such as Idempotency-Key: 8e03978e-40d5, as many clients send them: visible
// ASCII characters, taken as they are. By default the key must be an RFC
// 8941 String, quoted, as the Idempotency-Key draft says.
func WithBareKeys() MiddlewareOption {
	return func(c *middlewareConfig) { c.bare = true }
}

// WithOptionalKey lets guarded requests without an Idempotency-Key header
// through to the handler, unprotected. By default they get 400.
func WithOptionalKey() MiddlewareOption {
	return func(c *middlewareConfig) { c.optional = true }
}

// WithFingerprint sets what identifies a request's payload: two requests
// with the same key and different fingerprints get 422. fn gets the request
// and its body, already read; it must not read r.Body. The default is
// DefaultFingerprint (method, path, query string and body). It cannot be
// combined with WithQueryIgnored.
func WithFingerprint(fn func(r *http.Request, body []byte) []byte) MiddlewareOption {
	return func(c *middlewareConfig) {
		if fn == nil {
			c.invalid("WithFingerprint(nil)")
			return
		}
		c.fingerprint, c.custom = fn, true
	}
}

// WithQueryIgnored leaves the query string out of the default fingerprint:
// requests with the same key, method, path and body are the same payload
// whatever their query strings, and a retry with another query string gets
// the stored response. Use it where the query carries nothing of what the
// client asks for, such as tracking parameters. By default the query string
// is part of the fingerprint (see DefaultFingerprint). It cannot be
// combined with WithFingerprint.
func WithQueryIgnored() MiddlewareOption {
	return func(c *middlewareConfig) {
		c.fingerprint, c.ignoreQuery = fingerprintWithoutQuery, true
	}
}

// WithScope sets whose key a request's key is, such as the authenticated
// account: requests in different scopes never share a key, even when their
// clients send the same one. fn runs for every guarded request with a
// well-formed key, before its body is read. By default every request is in
// one scope, so every client must send keys no other client sends.
func WithScope(fn func(r *http.Request) string) MiddlewareOption {
	return func(c *middlewareConfig) {
		if fn == nil {
			c.invalid("WithScope(nil)")
			return
		}
		c.scope = fn
	}
}

// WithWaitForInProgress makes a request whose key is being processed by
// another request wait for it to finish, as Do waits (see WithWait), and
// then get its response. By default it gets 409 Conflict at once, as the
// Idempotency-Key draft says.
func WithWaitForInProgress() MiddlewareOption {
	return func(c *middlewareConfig) { c.wait = true }
}

// WithProblemType sets the base of the "type" URI of the problems the
// Middleware answers with (RFC 9457): each type is base, "#", and the
// problem's name, such as "in-progress" (the package documentation lists
// them). Point it at your API's documentation of idempotency keys. The
// default is DefaultProblemType. base must not be empty or hold a '#'.
func WithProblemType(base string) MiddlewareOption {
	return func(c *middlewareConfig) {
		if base == "" || strings.Contains(base, "#") {
			c.invalid("WithProblemType(%q): want a URI without a fragment", base)
			return
		}
		c.problemType = base
	}
}

// WithFailOpen makes the Middleware run the handler, unprotected, when Redis
// fails or does not answer before the handler would run; each time is
// logged. By default such a request gets 503 Service Unavailable and the
// handler does not run: a duplicate charge is worse than a failed one.
func WithFailOpen() MiddlewareOption {
	return func(c *middlewareConfig) { c.failOpen = true }
}

// WithMaxBody sets the size of the largest request body the Middleware
// accepts, in bytes: it reads the whole body before the handler runs, to
// fingerprint it. A larger body gets 413 Content Too Large. The default is
// DefaultMaxBody (1 MiB); it must be positive.
func WithMaxBody(n int64) MiddlewareOption {
	return func(c *middlewareConfig) {
		if n <= 0 {
			c.invalid("WithMaxBody(%d): must be positive", n)
			return
		}
		c.maxBody = n
	}
}
