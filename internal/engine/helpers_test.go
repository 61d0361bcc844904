package engine

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/dlock-go/dlock/internal/testenv"
)

func TestMain(m *testing.M) {
	testenv.Main(m, testenv.IgnoreRedial())
}

// The calls of package dlock that these tests make, on an Engine: a try
// once, a semaphore's and an RW lock's.

var testConfig = Config{Backoff: fixedBackoff(10 * time.Millisecond)}

type fixedBackoff time.Duration

func (f fixedBackoff) Delay(int, time.Duration) time.Duration { return time.Duration(f) }

// newTestEngine returns an Engine on rdb, closed at the end of the test.
func newTestEngine(t testing.TB, rdb redis.UniversalClient) *Engine {
	t.Helper()
	e := New(rdb, Options{Logger: slog.Default()})
	t.Cleanup(e.Close)
	return e
}

// newTestQuorum returns an Engine on a Redlock quorum of nodes.
func newTestQuorum(nodes []redis.UniversalClient, timeout time.Duration) *Engine {
	return NewQuorum(nodes, Options{Logger: slog.Default(), NodeTimeout: timeout})
}

// TryObtain is dlock.Client.TryObtain without its checks.
func (e *Engine) TryObtain(ctx context.Context, key string, ttl time.Duration) (*Hold, error) {
	h, _, err := e.Acquire(ctx, KindLock, e.Keys(key), ttl, nil, false, testConfig)
	return h, err
}

type testShared struct {
	e     *Engine
	key   string
	limit any
}

func (e *Engine) Semaphore(key string, limit int) testShared {
	return testShared{e: e, key: key, limit: int64(limit)}
}

func (e *Engine) RWMutex(key string) testShared { return testShared{e: e, key: key} }

func (s testShared) TryAcquire(ctx context.Context, ttl time.Duration) (*Hold, error) {
	return s.try(ctx, KindSemaphore, ttl)
}

func (s testShared) TryRLock(ctx context.Context, ttl time.Duration) (*Hold, error) {
	return s.try(ctx, KindRead, ttl)
}

func (s testShared) TryLock(ctx context.Context, ttl time.Duration) (*Hold, error) {
	return s.try(ctx, KindWrite, ttl)
}

func (s testShared) try(ctx context.Context, kind *Kind, ttl time.Duration) (*Hold, error) {
	cfg := testConfig
	cfg.Fair = kind != KindSemaphore
	h, _, err := s.e.Acquire(ctx, kind, HoldKeys(s.key), ttl, s.limit, false, cfg)
	return h, err
}

// mustRun runs o on n and returns its reply, failing the test on an error.
func mustRun(t testing.TB, n *node, o op) reply {
	t.Helper()
	r, err := n.run(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	return r
}
