package idempotency_test

import (
	"bytes"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dlock-go/dlock/idempotency"
	"github.com/dlock-go/dlock/internal/testenv"
)

// A replay has the stored headers but the hop-by-hop ones.
func TestMiddlewareReplayedHeaders(t *testing.T) {
	t.Parallel()
	store := newStore(t, testenv.Client(t))
	h := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		h := w.Header()
		h.Set("Connection", "X-Per-Hop")
		h.Set("X-Per-Hop", "1")
		h.Set("Keep-Alive", "timeout=5")
		h.Add("Set-Cookie", "a=1")
		h.Add("Set-Cookie", "b=2")
		h.Set("Location", "/payments/1")
		w.WriteHeader(http.StatusCreated)
		h.Set("X-After-Status", "not sent") // too late: not part of the response
		w.Write([]byte("created"))
	})
	srv := serve(t, store.Middleware(h))
	ctx := testenv.Timeout(t, 10*time.Second)
	post(ctx, t, srv.URL, `"k"`, "")
	r := post(ctx, t, srv.URL, `"k"`, "")
	if r.status != http.StatusCreated || r.body != "created" || r.header.Get("Location") != "/payments/1" ||
		strings.Join(r.header.Values("Set-Cookie"), ";") != "a=1;b=2" {
		t.Errorf("replay: %d %q %v", r.status, r.body, r.header)
	}
	for _, name := range []string{"X-Per-Hop", "Keep-Alive", "X-After-Status"} {
		if v := r.header.Get(name); v != "" {
			t.Errorf("replay has %s: %q", name, v)
		}
	}
}

// A response larger than WithMaxResult reaches the client whole, is not
// stored, frees the key, and is logged.
func TestMiddlewareLargeResponse(t *testing.T) {
	t.Parallel()
	var logs bytes.Buffer
	var logMu sync.Mutex
	logger := slog.New(slog.NewTextHandler(lockedWriter{&logMu, &logs}, nil))
	store := newStore(t, testenv.Client(t), idempotency.WithMaxResult(64<<10), idempotency.WithLogger(logger))
	large := bytes.Repeat([]byte("0123456789abcdef"), 16<<10) // 256 KiB
	var runs atomic.Int32
	srv := serve(t, store.Middleware(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		runs.Add(1)
		w.Write(large)
	})))
	ctx := testenv.Timeout(t, 10*time.Second)
	for range 2 {
		if r := post(ctx, t, srv.URL, `"k"`, ""); r.status != http.StatusOK || r.body != string(large) {
			t.Fatalf("large response: %d, %d bytes; want 200 and %d bytes", r.status, len(r.body), len(large))
		}
	}
	if n := runs.Load(); n != 2 {
		t.Errorf("the handler ran %d times, want 2: too large to store", n)
	}
	logMu.Lock()
	defer logMu.Unlock()
	if !strings.Contains(logs.String(), "too large to store") {
		t.Errorf("nothing logged about it:\n%s", logs.String())
	}
}

type lockedWriter struct {
	mu *sync.Mutex
	w  io.Writer
}

func (l lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// A streamed response reaches the client as the handler writes it, and is
// stored whole.
func TestMiddlewareStreamedResponse(t *testing.T) {
	t.Parallel()
	store := newStore(t, testenv.Client(t))
	firstRead := make(chan struct{})
	srv := serve(t, store.Middleware(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte("first,"))
		http.NewResponseController(w).Flush()
		select {
		case <-firstRead: // the client has the first part before the handler goes on
		case <-r.Context().Done():
			return
		}
		w.Write([]byte("second"))
	})))
	ctx := testenv.Timeout(t, 10*time.Second)
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, srv.URL, nil)
	req.Header.Set(idempotency.KeyHeader, `"k"`)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	part := make([]byte, len("first,"))
	if _, err := io.ReadFull(resp.Body, part); err != nil || string(part) != "first," {
		t.Fatalf("first part: %q, %v", part, err)
	}
	close(firstRead)
	rest, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if string(rest) != "second" {
		t.Errorf("rest: %q", rest)
	}
	if r := post(ctx, t, srv.URL, `"k"`, ""); r.body != "first,second" || r.header.Get(idempotency.ReplayHeader) != "true" {
		t.Errorf("replay: %q, want the whole streamed body", r.body)
	}
}

// Request bodies: large ones and streamed ones (no Content-Length) are
// fingerprinted and reach the handler whole; one over WithMaxBody gets 413.
func TestMiddlewareRequestBodies(t *testing.T) {
	t.Parallel()
	store := newStore(t, testenv.Client(t))
	var got atomic.Int64
	echo := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n, _ := io.Copy(io.Discard, r.Body)
		got.Store(n)
		fmt.Fprint(w, n)
	})
	srv := serve(t, store.Middleware(echo, idempotency.WithMaxBody(1<<20)))
	ctx := testenv.Timeout(t, 10*time.Second)
	large := strings.Repeat("x", 1<<20)
	if r := post(ctx, t, srv.URL, `"large"`, large); r.status != http.StatusOK || r.body != fmt.Sprint(1<<20) {
		t.Errorf("1 MiB body: %d %s", r.status, r.body)
	}
	if r := post(ctx, t, srv.URL, `"large"`, large[1:]+"y"); r.status != http.StatusUnprocessableEntity {
		t.Errorf("1 MiB body, last byte changed: %d, want 422", r.status)
	}
	if r := post(ctx, t, srv.URL, `"too-large"`, large+"x"); r.status != http.StatusRequestEntityTooLarge {
		t.Errorf("body over the limit: %d, want 413", r.status)
	} else if typ, _ := problemOf(t, r); !strings.HasSuffix(typ, "#body-too-large") {
		t.Errorf("type %q", typ)
	}

	pr, pw := io.Pipe()
	go func() {
		for range 64 {
			pw.Write([]byte(strings.Repeat("s", 1024)))
		}
		pw.Close()
	}()
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, srv.URL, pr) // chunked
	req.Header.Set(idempotency.KeyHeader, `"streamed"`)
	if r := do(t, req); r.status != http.StatusOK || r.body != "65536" {
		t.Errorf("streamed body: %d %s, want 200 65536", r.status, r.body)
	}
}
