// Package lockenv is the part of dlock's test environment that needs the
// root package: a dlock Client closed with the test, a Redlock one, and an
// Observer that counts open holds. It is apart from
// testenv, so that the tests inside package dlock, which cannot import
// what imports dlock, can use testenv.
package lockenv

import (
	"sync"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/dlock-go/dlock"
	"github.com/dlock-go/dlock/internal/testenv"
	"github.com/dlock-go/dlock/observe"
)

// Locker returns a dlock Client on rdb, or on a client of the shared
// redis-server (testenv.Client) if rdb is nil, closed when the test ends,
// before that client is: one Client per simulated process.
func Locker(t testing.TB, rdb redis.UniversalClient, opts ...dlock.Option) *dlock.Client {
	t.Helper()
	if rdb == nil {
		rdb = testenv.Client(t)
	}
	locker := dlock.New(rdb, opts...)
	t.Cleanup(func() { locker.Close() })
	return locker
}

// Redlock returns a dlock Client on a Redlock quorum of n clients of the
// shared redis-server, closed when the test ends: enough for a test that
// only needs a Client made by dlock.NewRedlock.
func Redlock(t testing.TB, n int) *dlock.Client {
	t.Helper()
	var nodes []redis.UniversalClient
	for range n {
		nodes = append(nodes, testenv.Client(t))
	}
	quorum, err := dlock.NewRedlock(nodes)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { quorum.Close() })
	return quorum
}

// Holds is an Observer that counts the holds obtained and not yet ended,
// records too, so that a test can wait until every end was told (Ended).
type Holds struct {
	mu   sync.Mutex
	open int
}

// Observe counts e.
func (h *Holds) Observe(e observe.Event) {
	h.mu.Lock()
	defer h.mu.Unlock()
	switch {
	case e.Type == observe.EventObtain && e.Result == observe.ResultObtained:
		h.open++
	case e.Ended:
		h.open--
	}
}

// Ended reports whether every hold obtained so far has ended.
func (h *Holds) Ended() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.open == 0
}
