package idempotency_test

import (
	"context"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/dlock-go/dlock/idempotency"
	"github.com/dlock-go/dlock/internal/testenv"
	"github.com/dlock-go/dlock/redistest"
)

// logRecorder is a slog.Handler that keeps the messages logged through it.
type logRecorder struct {
	mu       sync.Mutex
	messages []string
}

func (l *logRecorder) Enabled(context.Context, slog.Level) bool { return true }
func (l *logRecorder) WithAttrs([]slog.Attr) slog.Handler       { return l }
func (l *logRecorder) WithGroup(string) slog.Handler            { return l }

func (l *logRecorder) Handle(_ context.Context, r slog.Record) error {
	msg := r.Level.String() + " " + r.Message
	r.Attrs(func(a slog.Attr) bool {
		msg += " " + a.String()
		return true
	})
	l.mu.Lock()
	defer l.mu.Unlock()
	l.messages = append(l.messages, msg)
	return nil
}

// logged returns the messages that contain s.
func (l *logRecorder) logged(s string) []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []string
	for _, m := range l.messages {
		if strings.Contains(m, s) {
			out = append(out, m)
		}
	}
	return out
}

// all returns every message logged.
func (l *logRecorder) all() []string { return l.logged("") }

// quitter is a handler that gives up without writing anything once its
// context ends, the first time it runs; later it answers 201.
type quitter struct {
	runs    atomic.Int32
	running chan struct{} // closed when the first run is in the handler
	header  bool          // set a header before giving up
}

func newQuitter() *quitter { return &quitter{running: make(chan struct{})} }

func (q *quitter) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if q.runs.Add(1) > 1 {
		w.WriteHeader(http.StatusCreated)
		return
	}
	if q.header {
		w.Header().Set("Location", "/payments/1")
	}
	close(q.running)
	<-r.Context().Done()
}

// checkInterrupted fails the test unless r is the 503 of an interrupted
// request, with a Retry-After and none of the handler's headers.
func checkInterrupted(t *testing.T, r reply) {
	t.Helper()
	if r.status != http.StatusServiceUnavailable {
		t.Fatalf("the interrupted request got %d %q, want 503", r.status, r.body)
	}
	if typ, _ := problemOf(t, r); typ != idempotency.DefaultProblemType+"#interrupted" {
		t.Errorf("the interrupted request's problem is %q, want #interrupted", typ)
	}
	if r.header.Get("Retry-After") == "" || r.header.Get("Location") != "" {
		t.Errorf("the interrupted request's header: %v; want a Retry-After, no Location", r.header)
	}
}

// The key's lock is deleted while the handler runs: the handler's context
// ends, it stops without a response, and the client gets 503, not the 200
// that net/http sends for a handler that wrote nothing. Nothing is stored,
// and the retry runs the handler.
func TestMiddlewareLockDeletedMidRequest(t *testing.T) {
	t.Parallel()
	rdb := testenv.Client(t)
	logs := &logRecorder{}
	q := newQuitter()
	q.header = true
	web := serve(t, newStore(t, rdb, idempotency.WithLogger(slog.New(logs))).Middleware(q))
	ctx := testenv.Timeout(t, 10*time.Second)

	first := make(chan reply, 1)
	go func() { first <- post(ctx, t, web.URL, `"k"`, "") }()
	receive(t, q.running)
	locks := keysOf(t, rdb, "*:lock")
	if len(locks) != 1 {
		t.Fatalf("locks: %q, want one", locks)
	}
	rdb.Del(ctx, locks[0])
	checkInterrupted(t, receive(t, first))
	if stored := keysOf(t, rdb, "*:result"); len(stored) != 0 {
		t.Errorf("stored %q for an interrupted request", stored)
	}
	if len(logs.logged("lock was lost")) != 1 || len(logs.logged("not be stored")) != 0 {
		t.Errorf("logged %q; want one warning of the lost lock, none of a response not stored", logs.all())
	}
	if r := post(ctx, t, web.URL, `"k"`, ""); r.status != http.StatusCreated || r.header.Get(idempotency.ReplayHeader) != "" {
		t.Errorf("retry: %d, replayed %q; want the handler to run again", r.status, r.header.Get(idempotency.ReplayHeader))
	}
}

// Redis hangs past the lock's ttl while the handler runs, with go-redis's
// default options and with MaxRetries -1: the lock is lost, the handler
// stops without a response, and the client gets 503 while Redis still
// hangs. Once Redis is back, the retry runs the handler.
func TestMiddlewareRedisPausedPastLockTTL(t *testing.T) {
	t.Parallel()
	for name, opts := range map[string]func(*redis.Options){
		"default options": func(*redis.Options) {},
		"MaxRetries -1":   noRetries,
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			testRedisPausedPastLockTTL(t, opts)
		})
	}
}

func testRedisPausedPastLockTTL(t *testing.T, opts func(*redis.Options)) {
	srv := redistest.NewServer(t)
	q := newQuitter()
	const lockTTL = 300 * time.Millisecond
	store := newStore(t, srv.Client(opts), idempotency.WithLockTTL(lockTTL))
	web := serve(t, store.Middleware(q))
	retries := serve(t, store.Middleware(q, idempotency.WithWaitForInProgress()))
	ctx := testenv.Timeout(t, 10*time.Second)

	first := make(chan reply, 1)
	go func() { first <- post(ctx, t, web.URL, `"k"`, "") }()
	receive(t, q.running)
	srv.Pause()
	r := receive(t, first)
	srv.Resume()
	checkInterrupted(t, r)
	// The lock's key outlives its holder's validity by a drift margin: the
	// retry waits for it rather than getting 409.
	if r := post(ctx, t, retries.URL, `"k"`, ""); r.status != http.StatusCreated || r.header.Get(idempotency.ReplayHeader) != "" {
		t.Errorf("retry: %d, replayed %q; want the handler to run again", r.status, r.header.Get(idempotency.ReplayHeader))
	}
}

// A handler that wrote its response before the lock was lost: the client
// has that response, unchanged; it is not stored (the lock is not ours), the
// log says so, and the retry runs the handler.
func TestMiddlewareLockLostAfterResponse(t *testing.T) {
	t.Parallel()
	rdb := testenv.Client(t)
	logs := &logRecorder{}
	var runs atomic.Int32
	running := make(chan struct{})
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Run", strings.Repeat("I", int(runs.Add(1))))
		w.WriteHeader(http.StatusCreated)
		w.Write([]byte("charged"))
		if runs.Load() == 1 {
			close(running)
			<-r.Context().Done()
		}
	})
	web := serve(t, newStore(t, rdb, idempotency.WithLogger(slog.New(logs))).Middleware(h))
	ctx := testenv.Timeout(t, 10*time.Second)

	first := make(chan reply, 1)
	go func() { first <- post(ctx, t, web.URL, `"k"`, "") }()
	receive(t, running)
	locks := keysOf(t, rdb, "*:lock")
	if len(locks) != 1 {
		t.Fatalf("locks: %q, want one", locks)
	}
	rdb.Del(ctx, locks[0])
	if r := receive(t, first); r.status != http.StatusCreated || r.body != "charged" || r.header.Get("X-Run") != "I" {
		t.Errorf("the first request got %d %q %v, want the handler's 201", r.status, r.body, r.header)
	}
	if stored := keysOf(t, rdb, "*:result"); len(stored) != 0 {
		t.Errorf("stored %q by a request whose lock was lost", stored)
	}
	if len(logs.logged("could not be stored")) != 1 {
		t.Errorf("logged %q; want one warning of the response not stored", logs.all())
	}
	if r := post(ctx, t, web.URL, `"k"`, ""); r.status != http.StatusCreated || r.header.Get("X-Run") != "II" {
		t.Errorf("retry: %d %v; want the handler to run again", r.status, r.header)
	}
}
