package idempotency_test

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/dlock-go/dlock"
	"github.com/dlock-go/dlock/idempotency"
	"github.com/dlock-go/dlock/internal/testenv"
	"github.com/dlock-go/dlock/redistest"
)

// carefulPayments charges unless the request's context ended first, as a
// handler that respects its context does: it waits for proceed before
// charging, and gives up with 503 if the context ends first.
type carefulPayments struct {
	payments
	running chan struct{} // closed when the first request is in the handler
	proceed chan struct{} // closed to let the handler charge
	started atomic.Bool
}

func newCarefulPayments() *carefulPayments {
	return &carefulPayments{running: make(chan struct{}), proceed: make(chan struct{})}
}

func (p *carefulPayments) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if !p.started.Swap(true) {
		close(p.running)
	}
	select {
	case <-p.proceed:
		p.payments.ServeHTTP(w, r)
	case <-r.Context().Done():
		http.Error(w, "gave up: "+context.Cause(r.Context()).Error(), http.StatusServiceUnavailable)
	}
}

// noRetries makes go-redis report a refused connection at once.
func noRetries(o *redis.Options) { o.MaxRetries = -1 }

func TestMiddlewareRedisDown(t *testing.T) {
	t.Parallel()
	srv := redistest.NewServer(t)
	rdb := srv.Client(noRetries)
	pay := &payments{}
	closed := serve(t, newStore(t, rdb).Middleware(pay))
	open := serve(t, newStore(t, rdb).Middleware(pay, idempotency.WithFailOpen()))
	srv.Kill()
	ctx := testenv.Timeout(t, 10*time.Second)

	r := post(ctx, t, closed.URL, `"k"`, "")
	if typ, _ := problemOf(t, r); r.status != http.StatusServiceUnavailable || typ != idempotency.DefaultProblemType+"#unavailable" {
		t.Errorf("Redis down: %d %s, want 503 unavailable", r.status, typ)
	}
	if n := pay.charges.Load(); n != 0 {
		t.Fatalf("charged %d times with Redis down, fail closed", n)
	}
	if r := post(ctx, t, open.URL, `"k"`, ""); r.status != http.StatusCreated || pay.charges.Load() != 1 {
		t.Errorf("Redis down, WithFailOpen: %d, %d charges; want the handler to run", r.status, pay.charges.Load())
	}
}

func TestDoRedisDown(t *testing.T) {
	t.Parallel()
	srv := redistest.NewServer(t)
	store := newStore(t, srv.Client(noRetries))
	srv.Kill()
	var runs atomic.Int32
	_, _, err := store.Do(testenv.Timeout(t, 10*time.Second), "k", nil, counted(&runs, "r"))
	if !errors.Is(err, idempotency.ErrUnavailable) || runs.Load() != 0 {
		t.Errorf("Do with Redis down: %v, %d runs; want ErrUnavailable, no run", err, runs.Load())
	}
}

// A request to a hung Redis ends with its context, the handler does not
// run, and a retry once Redis is back charges once.
func TestMiddlewareRedisPaused(t *testing.T) {
	t.Parallel()
	srv := redistest.NewServer(t)
	pay := &payments{}
	mw := newStore(t, srv.Client()).Middleware(pay)
	served := make(chan struct{}, 1)
	web := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mw.ServeHTTP(w, r)
		select {
		case served <- struct{}{}:
		default: // the retries below: nobody waits for them here
		}
	}))

	srv.Pause()
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, web.URL, nil)
	req.Header.Set(idempotency.KeyHeader, `"k"`)
	if resp, err := http.DefaultClient.Do(req); err == nil {
		resp.Body.Close()
		t.Fatalf("the request got %d from a hung Redis, want it to time out", resp.StatusCode)
	}
	select {
	case <-served: // the middleware returned while Redis still hangs
	case <-time.After(10 * time.Second):
		t.Fatal("the middleware did not return with its request's context")
	}
	srv.Resume()
	if n := pay.charges.Load(); n != 0 {
		t.Fatalf("charged %d times while Redis hung", n)
	}
	// The hung request's acquire lands when Redis is back, and is released
	// at once, as its caller gave up; until then a retry is told 409.
	ctx = testenv.Timeout(t, 10*time.Second)
	var r reply
	testenv.Eventually(t, 10*time.Second, "a retry not told 409 once the hung acquire is released", func() bool {
		r = post(ctx, t, web.URL, `"k"`, "")
		return r.status != http.StatusConflict
	})
	if r.status != http.StatusCreated || pay.charges.Load() != 1 {
		t.Errorf("retry after Redis came back: %d, %d charges; want one charge", r.status, pay.charges.Load())
	}
}

func TestDoRedisPaused(t *testing.T) {
	t.Parallel()
	srv := redistest.NewServer(t)
	store := newStore(t, srv.Client())
	srv.Pause()
	defer srv.Resume()
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	var runs atomic.Int32
	if _, _, err := store.Do(ctx, "k", nil, counted(&runs, "r")); !errors.Is(err, context.DeadlineExceeded) || runs.Load() != 0 {
		t.Errorf("Do on a hung Redis: %v, %d runs; want DeadlineExceeded, no run", err, runs.Load())
	}
}

// Redis restarts, empty, while the handler runs: the lock is gone, so the
// handler's context is cancelled before it charges, nothing is stored, and
// the retry charges once.
func TestMiddlewareRedisRestartedMidRequest(t *testing.T) {
	t.Parallel()
	srv := redistest.NewServer(t)
	pay := newCarefulPayments()
	web := serve(t, newStore(t, srv.Client(), idempotency.WithLockTTL(300*time.Millisecond)).Middleware(pay))
	ctx := testenv.Timeout(t, 10*time.Second)

	first := make(chan reply, 1)
	go func() { first <- post(ctx, t, web.URL, `"k"`, "") }()
	receive(t, pay.running)
	srv.Restart()
	if r := receive(t, first); r.status != http.StatusServiceUnavailable {
		t.Errorf("the request Redis restarted under: %d %s, want the handler's 503", r.status, r.body)
	}
	close(pay.proceed)
	if r := post(ctx, t, web.URL, `"k"`, ""); r.status != http.StatusCreated || r.header.Get(idempotency.ReplayHeader) != "" {
		t.Errorf("retry: %d, want a first charge", r.status)
	}
	if n := pay.charges.Load(); n != 1 {
		t.Errorf("charged %d times, want 1", n)
	}
}

// The process that runs the first request dies mid-handler. It is
// simulated in this process: "process A" has its own Redis client, Store
// and HTTP server; killing it closes its Store and its Redis client
// without releasing anything, and its handler never charges. The key frees
// when A's lock's ttl runs out, and the retry on process B, which waits for
// in-progress requests, then charges once.
func TestMiddlewareProcessKilledMidHandler(t *testing.T) {
	t.Parallel()
	srv := redistest.NewServer(t)
	ctx := testenv.Timeout(t, 30*time.Second)
	// B's lock must outlive a stall of its renewals on a busy machine: a
	// lock lost mid-handler stores nothing, and the later retry would run
	// the handler again (as documented), which is not what this tests.
	const lockTTL = 2 * time.Second

	rdbA := redis.NewClient(&redis.Options{Addr: srv.Addr()})
	lockerA := dlock.New(rdbA)
	storeA, err := idempotency.New(lockerA, idempotency.WithPrefix(prefix(t)), idempotency.WithLockTTL(lockTTL))
	if err != nil {
		t.Fatal(err)
	}
	dead := make(chan struct{})
	var chargedByA atomic.Int32
	running := make(chan struct{})
	webA := serve(t, storeA.Middleware(http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) {
		close(running)
		<-dead // killed: it never gets to charge
		if r.Context().Err() == nil {
			chargedByA.Add(1)
		}
	})))
	answerA := make(chan reply, 1)
	go func() { answerA <- post(ctx, t, webA.URL, `"k"`, "") }()
	receive(t, running)
	storeA.Close() // the process dies: no release, no renewal
	lockerA.Close()
	rdbA.Close()

	pay := &payments{}
	webB := serve(t, newStore(t, srv.Client(), idempotency.WithLockTTL(lockTTL)).Middleware(pay, idempotency.WithWaitForInProgress()))
	if r := post(ctx, t, webB.URL, `"k"`, ""); r.status != http.StatusCreated || r.header.Get(idempotency.ReplayHeader) != "" {
		t.Errorf("retry on another process: %d %s, want the first charge", r.status, r.body)
	}
	close(dead)
	receive(t, answerA)
	if n := pay.charges.Load() + chargedByA.Load(); n != 1 {
		t.Errorf("charged %d times, want 1", n)
	}
	if r := post(ctx, t, webB.URL, `"k"`, ""); r.header.Get(idempotency.ReplayHeader) != "true" {
		t.Errorf("a later retry: %d, want the replay", r.status)
	}
}

// A client that goes away while the handler runs: a handler that gives up
// without writing anything leaves nothing stored, and the retry runs it.
func TestMiddlewareClientGoneMidHandler(t *testing.T) {
	t.Parallel()
	var runs atomic.Int32
	mw := newStore(t, testenv.Client(t)).Middleware(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if runs.Add(1) == 1 {
			<-r.Context().Done() // the client went away: give up, write nothing
			return
		}
		w.WriteHeader(http.StatusCreated)
	}))
	served := make(chan struct{}, 2)
	web := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mw.ServeHTTP(w, r)
		served <- struct{}{}
	}))

	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, web.URL, nil)
	req.Header.Set(idempotency.KeyHeader, `"k"`)
	sent := make(chan error, 1)
	go func() {
		resp, err := http.DefaultClient.Do(req)
		if err == nil {
			resp.Body.Close()
		}
		sent <- err
	}()
	testenv.Eventually(t, 10*time.Second, "in the handler", func() bool { return runs.Load() == 1 })
	cancel()
	receive(t, sent)
	receive(t, served) // the middleware is done with the first request
	if r := post(testenv.Timeout(t, 10*time.Second), t, web.URL, `"k"`, ""); r.status != http.StatusCreated || r.header.Get(idempotency.ReplayHeader) != "" {
		t.Errorf("retry: %d, replayed %q; want the handler to run again", r.status, r.header.Get(idempotency.ReplayHeader))
	}
}

// Redis hangs while the handler runs: the lock's validity runs out without
// a refresh, so the handler's context is cancelled before it charges, the
// request ends, and the retry once Redis is back charges once.
func TestMiddlewareRedisPausedMidHandler(t *testing.T) {
	t.Parallel()
	srv := redistest.NewServer(t)
	pay := newCarefulPayments()
	store := newStore(t, srv.Client(), idempotency.WithLockTTL(300*time.Millisecond))
	web := serve(t, store.Middleware(pay))
	// The lock ends for its holder a little before its key expires in
	// Redis: the retry waits for the key instead of getting 409.
	retries := serve(t, store.Middleware(pay, idempotency.WithWaitForInProgress()))
	ctx := testenv.Timeout(t, 10*time.Second)

	first := make(chan reply, 1)
	go func() { first <- post(ctx, t, web.URL, `"k"`, "") }()
	receive(t, pay.running)
	srv.Pause()
	r := receive(t, first)
	srv.Resume()
	if r.status != http.StatusServiceUnavailable || !strings.Contains(r.body, "lock lost") {
		t.Errorf("the request Redis hung under: %d %s, want the handler's 503, lock lost", r.status, r.body)
	}
	close(pay.proceed)
	if r := post(ctx, t, retries.URL, `"k"`, ""); r.status != http.StatusCreated || r.header.Get(idempotency.ReplayHeader) != "" {
		t.Errorf("retry: %d, want a first charge", r.status)
	}
	if n := pay.charges.Load(); n != 1 {
		t.Errorf("charged %d times, want 1", n)
	}
}
