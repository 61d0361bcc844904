package idempotency_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dlock-go/dlock/idempotency"
	"github.com/dlock-go/dlock/internal/testenv"
)

// payments is a handler that charges once per request it runs: it counts
// its runs and answers 201 with the charge's number.
type payments struct {
	charges atomic.Int32
}

func (p *payments) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	n := p.charges.Add(1)
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Charge-Id", fmt.Sprint("ch_", n))
	w.WriteHeader(http.StatusCreated)
	fmt.Fprintf(w, `{"charge":%d,"request":%q}`, n, body)
}

// reply is what a client got.
type reply struct {
	status int
	header http.Header
	body   string
}

// post sends a POST with the key (a raw header value; "" for none) and body.
// It may be called from any goroutine: a failure to send is a reply with
// status 0 and the error as its body, and fails the test.
func post(ctx context.Context, t testing.TB, url, key, body string) reply {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		t.Error(err)
		return reply{body: err.Error()}
	}
	if key != "" {
		req.Header.Set(idempotency.KeyHeader, key)
	}
	return do(t, req)
}

// do sends req, as post does.
func do(t testing.TB, req *http.Request) reply {
	t.Helper()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Error(err)
		return reply{body: err.Error()}
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Error(err)
	}
	return reply{resp.StatusCode, resp.Header, string(b)}
}

// serve starts an HTTP server on loopback, stopped when the test ends.
func serve(t testing.TB, h http.Handler) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv
}

// problemOf decodes a problem answer, and fails the test if it is not one.
func problemOf(t testing.TB, r reply) (typ, title string) {
	t.Helper()
	if ct := r.header.Get("Content-Type"); ct != "application/problem+json" {
		t.Fatalf("status %d, Content-Type %q, want application/problem+json; body %s", r.status, ct, r.body)
	}
	var p struct {
		Type   string
		Title  string
		Status int
		Detail string
	}
	if err := json.Unmarshal([]byte(r.body), &p); err != nil {
		t.Fatalf("problem body %q: %v", r.body, err)
	}
	if p.Status != r.status || p.Title == "" || p.Detail == "" {
		t.Errorf("problem %+v for status %d: want the status, a title and a detail", p, r.status)
	}
	return p.Type, p.Title
}

func TestMiddlewareRunsOnceThenReplays(t *testing.T) {
	t.Parallel()
	pay := &payments{}
	srv := serve(t, newStore(t, testenv.Client(t)).Middleware(pay))
	ctx := testenv.Timeout(t, 10*time.Second)

	first := post(ctx, t, srv.URL+"/pay", `"k-1"`, "amount=10")
	if first.status != http.StatusCreated || first.header.Get(idempotency.ReplayHeader) != "" {
		t.Fatalf("first request: %d %v %s", first.status, first.header, first.body)
	}
	again := post(ctx, t, srv.URL+"/pay", `"k-1"`, "amount=10")
	if again.status != first.status || again.body != first.body ||
		again.header.Get("X-Charge-Id") != "ch_1" || again.header.Get(idempotency.ReplayHeader) != "true" {
		t.Errorf("retry: %d %v %s; want the first response replayed", again.status, again.header, again.body)
	}
	if n := pay.charges.Load(); n != 1 {
		t.Errorf("charged %d times, want 1", n)
	}
}

// 50 identical requests at once: the handler runs once; every client gets
// its response or 409. The handler is held until the 49 others are
// answered, so all of them are concurrent with it.
func TestMiddlewareFiftyConcurrentRequests(t *testing.T) {
	t.Parallel()
	const requests = 50
	var answered atomic.Int32
	othersDone := make(chan struct{})
	pay := &payments{}
	held := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-othersDone:
		case <-r.Context().Done():
			http.Error(w, "gave up", http.StatusServiceUnavailable)
			return
		}
		pay.ServeHTTP(w, r)
	})
	srv := serve(t, newStore(t, testenv.Client(t)).Middleware(held))
	ctx := testenv.Timeout(t, 20*time.Second)

	replies := make([]reply, requests)
	var wg sync.WaitGroup
	for i := range requests {
		wg.Go(func() {
			replies[i] = post(ctx, t, srv.URL+"/pay", `"double-click"`, "order=1001")
			if replies[i].status == http.StatusConflict && answered.Add(1) == requests-1 {
				close(othersDone)
			}
		})
	}
	wg.Wait()

	var created, conflicts int
	for _, r := range replies {
		switch r.status {
		case http.StatusCreated:
			created++
		case http.StatusConflict:
			conflicts++
			if typ, _ := problemOf(t, r); typ != idempotency.DefaultProblemType+"#in-progress" || r.header.Get("Retry-After") == "" {
				t.Errorf("409 with type %q, Retry-After %q", typ, r.header.Get("Retry-After"))
			}
		default:
			t.Errorf("unexpected answer %d %s", r.status, r.body)
		}
	}
	if created != 1 || conflicts != requests-1 {
		t.Errorf("%d created, %d conflicts; want 1 and %d", created, conflicts, requests-1)
	}
	if n := pay.charges.Load(); n != 1 {
		t.Errorf("charged %d times, want 1", n)
	}
	if r := post(ctx, t, srv.URL+"/pay", `"double-click"`, "order=1001"); r.status != http.StatusCreated || r.header.Get(idempotency.ReplayHeader) != "true" {
		t.Errorf("a retry after the first finished: %d, want the replayed 201", r.status)
	}
}

// With WithWaitForInProgress, concurrent requests wait and get the response.
func TestMiddlewareWaitForInProgress(t *testing.T) {
	t.Parallel()
	const requests = 20
	pay := &payments{}
	srv := serve(t, newStore(t, testenv.Client(t)).Middleware(pay, idempotency.WithWaitForInProgress()))
	ctx := testenv.Timeout(t, 20*time.Second)
	replies := make([]reply, requests)
	var wg sync.WaitGroup
	for i := range requests {
		wg.Go(func() { replies[i] = post(ctx, t, srv.URL+"/pay", `"k"`, "order=1") })
	}
	wg.Wait()
	for i, r := range replies {
		if r.status != http.StatusCreated || r.body != replies[0].body {
			t.Errorf("request %d: %d %s; want 201 %s", i, r.status, r.body, replies[0].body)
		}
	}
	if n := pay.charges.Load(); n != 1 {
		t.Errorf("charged %d times, want 1", n)
	}
}

func TestMiddlewareKeyReusedWithAnotherPayload(t *testing.T) {
	t.Parallel()
	pay := &payments{}
	srv := serve(t, newStore(t, testenv.Client(t)).Middleware(pay))
	ctx := testenv.Timeout(t, 10*time.Second)
	post(ctx, t, srv.URL+"/pay", `"k"`, "amount=10")
	for _, r := range []reply{
		post(ctx, t, srv.URL+"/pay", `"k"`, "amount=99"),    // another body
		post(ctx, t, srv.URL+"/refund", `"k"`, "amount=10"), // another path
	} {
		if typ, _ := problemOf(t, r); r.status != http.StatusUnprocessableEntity || typ != idempotency.DefaultProblemType+"#key-reused" {
			t.Errorf("key reused: %d %s, want 422 key-reused", r.status, typ)
		}
	}
	if n := pay.charges.Load(); n != 1 {
		t.Errorf("charged %d times, want 1", n)
	}
}

func TestMiddlewareFingerprintOption(t *testing.T) {
	t.Parallel()
	pay := &payments{}
	byAmount := func(r *http.Request, _ []byte) []byte { return []byte(r.URL.Query().Get("amount")) }
	srv := serve(t, newStore(t, testenv.Client(t)).Middleware(pay, idempotency.WithFingerprint(byAmount)))
	ctx := testenv.Timeout(t, 10*time.Second)
	post(ctx, t, srv.URL+"/pay?amount=10", `"k"`, "note=a")
	if r := post(ctx, t, srv.URL+"/pay?amount=10", `"k"`, "note=b"); r.status != http.StatusCreated {
		t.Errorf("same amount, another body: %d, want the replay", r.status)
	}
	if r := post(ctx, t, srv.URL+"/pay?amount=11", `"k"`, "note=a"); r.status != http.StatusUnprocessableEntity {
		t.Errorf("another amount: %d, want 422", r.status)
	}
}

// The query string is part of the default fingerprint: the same key on
// /pay?amount=1000 and on /pay is a reused key. WithQueryIgnored leaves it
// out.
func TestMiddlewareQueryInFingerprint(t *testing.T) {
	t.Parallel()
	pay := &payments{}
	store := newStore(t, testenv.Client(t))
	srv := serve(t, store.Middleware(pay))
	ignoring := serve(t, store.Middleware(pay, idempotency.WithQueryIgnored()))
	ctx := testenv.Timeout(t, 10*time.Second)

	if r := post(ctx, t, srv.URL+"/pay", `"k"`, ""); r.status != http.StatusCreated {
		t.Fatalf("first: %d", r.status)
	}
	r := post(ctx, t, srv.URL+"/pay?amount=1000", `"k"`, "")
	if typ, _ := problemOf(t, r); r.status != http.StatusUnprocessableEntity || typ != idempotency.DefaultProblemType+"#key-reused" {
		t.Errorf("/pay?amount=1000 with the key of /pay: %d %s, want 422 key-reused", r.status, typ)
	}
	if r := post(ctx, t, srv.URL+"/pay?", `"k"`, ""); r.header.Get(idempotency.ReplayHeader) != "true" {
		t.Errorf("/pay? (an empty query) with the key of /pay: %d, want the replay", r.status)
	}
	post(ctx, t, srv.URL+"/pay?amount=1000", `"k2"`, "")
	if r := post(ctx, t, srv.URL+"/pay?amount=1000", `"k2"`, ""); r.header.Get(idempotency.ReplayHeader) != "true" {
		t.Errorf("the same query again: %d, want the replay", r.status)
	}
	if r := post(ctx, t, srv.URL+"/pay?amount=1", `"k2"`, ""); r.status != http.StatusUnprocessableEntity {
		t.Errorf("another query: %d, want 422", r.status)
	}

	first := post(ctx, t, ignoring.URL+"/pay?amount=1000", `"k3"`, "")
	again := post(ctx, t, ignoring.URL+"/pay?amount=1", `"k3"`, "")
	if again.header.Get(idempotency.ReplayHeader) != "true" || again.body != first.body {
		t.Errorf("WithQueryIgnored, another query: %d %s, want %s replayed", again.status, again.body, first.body)
	}
	if n := pay.charges.Load(); n != 3 {
		t.Errorf("charged %d times, want 3", n)
	}
}

// A request without a query string has the fingerprint it had when the
// default fingerprint left the query out: the records stored for it still
// match.
func TestDefaultFingerprintWithoutQuery(t *testing.T) {
	t.Parallel()
	old := func(method, path, body string) []byte {
		sum := sha256.Sum256([]byte(method + "\x00" + path + "\x00" + body))
		return sum[:]
	}
	for _, target := range []string{"/pay", "/pay/%3Fx", "/"} {
		r := httptest.NewRequest(http.MethodPost, target, nil)
		if got, want := idempotency.DefaultFingerprint(r, []byte("amount=10")), old(http.MethodPost, r.URL.EscapedPath(), "amount=10"); !bytes.Equal(got, want) {
			t.Errorf("%s: fingerprint %x, want %x", target, got, want)
		}
	}
	a := idempotency.DefaultFingerprint(httptest.NewRequest(http.MethodPost, "/pay?amount=1000", nil), nil)
	b := idempotency.DefaultFingerprint(httptest.NewRequest(http.MethodPost, "/pay%3Famount=1000", nil), nil)
	if bytes.Equal(a, b) {
		t.Error("/pay?amount=1000 and /pay%3Famount=1000 have one fingerprint")
	}
}

func TestMiddlewareScope(t *testing.T) {
	t.Parallel()
	pay := &payments{}
	account := func(r *http.Request) string { return r.Header.Get("X-Account") }
	srv := serve(t, newStore(t, testenv.Client(t)).Middleware(pay, idempotency.WithScope(account)))
	ctx := testenv.Timeout(t, 10*time.Second)
	send := func(acct string) reply {
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, srv.URL+"/pay", strings.NewReader("amount=10"))
		req.Header.Set(idempotency.KeyHeader, `"same-key"`)
		req.Header.Set("X-Account", acct)
		return do(t, req)
	}
	a, b, a2 := send("alice"), send("bob"), send("alice")
	if a.body == b.body || a2.body != a.body || a2.header.Get(idempotency.ReplayHeader) != "true" {
		t.Errorf("alice %s, bob %s, alice again %s: want two charges, alice's replayed", a.body, b.body, a2.body)
	}
	if n := pay.charges.Load(); n != 2 {
		t.Errorf("charged %d times, want 2", n)
	}
}

func TestMiddlewareRetention(t *testing.T) {
	t.Parallel()
	pay := &payments{}
	srv := serve(t, newStore(t, testenv.Client(t), idempotency.WithRetention(100*time.Millisecond)).Middleware(pay))
	ctx := testenv.Timeout(t, 10*time.Second)
	post(ctx, t, srv.URL+"/pay", `"k"`, "a")
	testenv.Eventually(t, 5*time.Second, "charged again", func() bool {
		r := post(ctx, t, srv.URL+"/pay", `"k"`, "a")
		return r.status == http.StatusCreated && r.header.Get(idempotency.ReplayHeader) == ""
	})
	if n := pay.charges.Load(); n != 2 {
		t.Errorf("charged %d times, want 2: once, and once after the retention", n)
	}
}

func TestMiddlewareMethods(t *testing.T) {
	t.Parallel()
	pay := &payments{}
	store := newStore(t, testenv.Client(t))
	ctx := testenv.Timeout(t, 10*time.Second)
	srv := serve(t, store.Middleware(pay))
	for _, method := range []string{http.MethodGet, http.MethodPut, http.MethodDelete} {
		req, _ := http.NewRequestWithContext(ctx, method, srv.URL, nil)
		if r := do(t, req); r.status != http.StatusCreated {
			t.Errorf("%s without a key: %d, want the handler's 201", method, r.status)
		}
	}
	req, _ := http.NewRequestWithContext(ctx, http.MethodPatch, srv.URL, nil)
	if r := do(t, req); r.status != http.StatusBadRequest {
		t.Errorf("PATCH without a key: %d, want 400", r.status)
	}
	put := serve(t, store.Middleware(pay, idempotency.WithMethods("put")))
	req, _ = http.NewRequestWithContext(ctx, http.MethodPut, put.URL, nil)
	if r := do(t, req); r.status != http.StatusBadRequest {
		t.Errorf("PUT without a key, WithMethods(PUT): %d, want 400", r.status)
	}
	if r := post(ctx, t, put.URL, "", ""); r.status != http.StatusCreated {
		t.Errorf("POST without a key, WithMethods(PUT): %d, want the handler's 201", r.status)
	}
	optional := serve(t, store.Middleware(pay, idempotency.WithOptionalKey()))
	if r := post(ctx, t, optional.URL, "", ""); r.status != http.StatusCreated {
		t.Errorf("POST without a key, WithOptionalKey: %d, want the handler's 201", r.status)
	}
}

// Server errors, "try again later" answers and panics are not stored, and
// free the key for a retry.
func TestMiddlewareFailuresAreNotStored(t *testing.T) {
	t.Parallel()
	store := newStore(t, testenv.Client(t))
	for _, status := range []int{500, 502, 503, 408, 429} {
		var runs atomic.Int32
		h := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			if runs.Add(1) == 1 {
				http.Error(w, "try again", status)
				return
			}
			w.WriteHeader(http.StatusCreated)
		})
		srv := serve(t, store.Middleware(h))
		ctx := testenv.Timeout(t, 10*time.Second)
		key := fmt.Sprintf(`"status-%d"`, status)
		if r := post(ctx, t, srv.URL, key, ""); r.status != status {
			t.Errorf("first: %d, want %d", r.status, status)
		}
		if r := post(ctx, t, srv.URL, key, ""); r.status != http.StatusCreated || r.header.Get(idempotency.ReplayHeader) != "" {
			t.Errorf("after %d: %d, want the handler to run again", status, r.status)
		}
	}
}

func TestMiddlewarePanicFreesTheKey(t *testing.T) {
	t.Parallel()
	store := newStore(t, testenv.Client(t))
	var runs atomic.Int32
	h := store.Middleware(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		if runs.Add(1) == 1 {
			panic(http.ErrAbortHandler)
		}
		w.WriteHeader(http.StatusCreated)
	}))
	request := func() *http.Request {
		r := httptest.NewRequestWithContext(testenv.Timeout(t, 10*time.Second), http.MethodPost, "/pay", nil)
		r.Header.Set(idempotency.KeyHeader, `"k"`)
		return r
	}
	func() {
		defer func() {
			r := recover()
			if err, _ := r.(error); !errors.Is(err, http.ErrAbortHandler) {
				t.Errorf("recovered %v, want the handler's panic", r)
			}
		}()
		h.ServeHTTP(httptest.NewRecorder(), request())
	}()
	w := httptest.NewRecorder()
	h.ServeHTTP(w, request())
	if w.Code != http.StatusCreated || runs.Load() != 2 {
		t.Errorf("after a panic: %d, %d runs; want the handler to run again", w.Code, runs.Load())
	}
}

func TestMiddlewareProblemType(t *testing.T) {
	t.Parallel()
	store := newStore(t, testenv.Client(t))
	srv := serve(t, store.Middleware(&payments{}, idempotency.WithProblemType("https://developer.example.com/idempotency")))
	r := post(testenv.Timeout(t, 10*time.Second), t, srv.URL, "", "")
	if typ, title := problemOf(t, r); typ != "https://developer.example.com/idempotency#missing-key" || title != "Idempotency-Key is missing" {
		t.Errorf("missing key: %d %q %q", r.status, typ, title)
	}
}

// A misconfigured Middleware answers 500 to guarded requests, never panics.
func TestMiddlewareInvalid(t *testing.T) {
	t.Parallel()
	store := newStore(t, testenv.Client(t))
	handlers := map[string]http.Handler{
		"nil handler":        store.Middleware(nil),
		"nil option":         store.Middleware(&payments{}, nil),
		"no methods":         store.Middleware(&payments{}, idempotency.WithMethods()),
		"nil fingerprint":    store.Middleware(&payments{}, idempotency.WithFingerprint(nil)),
		"nil scope":          store.Middleware(&payments{}, idempotency.WithScope(nil)),
		"type with fragment": store.Middleware(&payments{}, idempotency.WithProblemType("https://x/#y")),
		"max body 0":         store.Middleware(&payments{}, idempotency.WithMaxBody(0)),
		"query ignored, own fingerprint": store.Middleware(&payments{}, idempotency.WithQueryIgnored(),
			idempotency.WithFingerprint(func(*http.Request, []byte) []byte { return nil })),
		"nil store":  (*idempotency.Store)(nil).Middleware(&payments{}),
		"zero store": new(idempotency.Store).Middleware(&payments{}),
	}
	for name, h := range handlers {
		w := httptest.NewRecorder()
		r := httptest.NewRequest(http.MethodPost, "/pay", nil)
		r.Header.Set(idempotency.KeyHeader, `"k"`)
		h.ServeHTTP(w, r)
		if w.Code != http.StatusInternalServerError || w.Header().Get("Content-Type") != "application/problem+json" {
			t.Errorf("%s: %d %s, want a 500 problem", name, w.Code, w.Body)
		}
	}
}
