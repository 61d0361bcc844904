package faults_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/dlock-go/dlock"
	"github.com/dlock-go/dlock/faults"
	"github.com/dlock-go/dlock/internal/testenv"
)

// quorum is n nodes behind proxies, and a Redlock Client that reaches them
// through the proxies.
type quorum struct {
	nodes  []faults.Node
	direct []*redis.Client // to the servers themselves, around the proxies
	locker *dlock.Client
}

func newQuorum(t *testing.T, n int, opts ...dlock.Option) *quorum {
	t.Helper()
	q := &quorum{nodes: faults.Nodes(t, n)}
	var clients []redis.UniversalClient
	for _, node := range q.nodes {
		clients = append(clients, node.Proxy.Client())
		q.direct = append(q.direct, node.Server.Client())
	}
	locker, err := dlock.NewRedlock(clients, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { locker.Close() })
	q.locker = locker
	return q
}

// holders counts the nodes whose key holds token, asked around the proxies.
func (q *quorum) holders(key, token string) int {
	n := 0
	for _, rdb := range q.direct {
		if rdb.Get(context.Background(), key).Val() == token {
			n++
		}
	}
	return n
}

func timeout(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// Connections to two of five nodes cut: a lock is still obtained, released,
// and obtained again once they are back.
func TestRedlockTwoOfFiveCut(t *testing.T) {
	t.Parallel()
	q := newQuorum(t, 5, dlock.WithNodeTimeout(time.Second))
	q.nodes[0].Proxy.Cut()
	q.nodes[3].Proxy.Cut()
	lock, err := q.locker.Obtain(timeout(t, 5*time.Second), "job", time.Minute)
	if err != nil {
		t.Fatalf("Obtain with 2 of 5 cut off: %v", err)
	}
	if n := q.holders("job", lock.Token()); n != 3 {
		t.Errorf("%d nodes hold the lock, want the 3 reachable ones", n)
	}
	if err := lock.Release(context.Background()); err != nil {
		t.Fatal(err)
	}
	q.nodes[0].Proxy.Restore()
	q.nodes[3].Proxy.Restore()
	lock, err = q.locker.Obtain(timeout(t, 5*time.Second), "job", time.Minute)
	if err != nil {
		t.Fatalf("Obtain after the cut: %v", err)
	}
	_ = lock.Release(context.Background())
}

// Three of five nodes slower than the node timeout: Obtain fails within
// its deadline, and the error says how the nodes voted.
func TestRedlockLatencyOverNodeTimeout(t *testing.T) {
	t.Parallel()
	const nodeTimeout = 100 * time.Millisecond
	q := newQuorum(t, 5, dlock.WithNodeTimeout(nodeTimeout))
	// Warm the connections first: the latency then delays the commands, not
	// the handshake.
	if lock, err := q.locker.TryObtain(context.Background(), "warm", time.Second); err == nil {
		_ = lock.Release(context.Background())
	}
	const slow = 5 * time.Second // far past the node timeout, so that waiting for it shows
	for _, node := range q.nodes[:3] {
		defer node.Proxy.Latency(slow, 0)()
	}
	start := time.Now()
	_, err := q.locker.Obtain(timeout(t, 4*slow), "slow", time.Minute)
	var qe *dlock.QuorumError
	if !errors.As(err, &qe) {
		t.Fatalf("Obtain with 3 of 5 slow = %v, want a QuorumError", err)
	}
	if took := time.Since(start); took >= slow {
		t.Errorf("Obtain took %v: it waited for the slow nodes, not the node timeout %v", took, nodeTimeout)
	}
	t.Log(err)
}

// Latency under the node timeout costs time, not the lock.
func TestRedlockLatencyUnderNodeTimeout(t *testing.T) {
	t.Parallel()
	q := newQuorum(t, 3, dlock.WithNodeTimeout(500*time.Millisecond))
	for _, node := range q.nodes {
		defer node.Proxy.Latency(20*time.Millisecond, 5*time.Millisecond)()
	}
	lock, err := q.locker.Obtain(timeout(t, 5*time.Second), "slow", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if err := lock.Refresh(context.Background(), time.Minute); err != nil {
		t.Errorf("Refresh: %v", err)
	}
	if err := lock.Release(context.Background()); err != nil {
		t.Errorf("Release: %v", err)
	}
}

// A holder cut off from its quorum, by cut connections or by a network
// that swallows everything, sees its renewed lock lost by the time its
// validity ends, before the nodes let the key expire.
func TestRedlockHolderCutOff(t *testing.T) {
	t.Parallel()
	// The drift margin is what the signal has between Until and the nodes'
	// expiry; with a 1 s ttl (12 ms) a loaded two-core machine running the
	// suite with -race missed it once by 7 ms of scheduling delay.
	const ttl = 3 * time.Second
	drift := ttl/100 + 2*time.Millisecond // the drift margin of Lock.Until
	for _, tc := range []struct {
		name string
		cut  func(*faults.Proxy)
	}{
		{"connections cut", (*faults.Proxy).Cut},
		{"blackhole", func(p *faults.Proxy) { p.Blackhole() }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			q := newQuorum(t, 3, dlock.WithNodeTimeout(200*time.Millisecond))
			lock, err := q.locker.TryObtain(context.Background(), "leader", ttl, dlock.WithAutoRenew(true))
			if err != nil {
				t.Fatal(err)
			}
			time.Sleep(ttl / 2) // renewed once
			tc.cut(q.nodes[0].Proxy)
			tc.cut(q.nodes[1].Proxy)
			until := lock.Until()
			select {
			case <-lock.Done():
			case <-time.After(3 * ttl):
				t.Fatal("the lock was not reported lost")
			}
			closed := time.Now()
			if !errors.Is(lock.Err(), dlock.ErrLockLost) {
				t.Errorf("Err = %v, want ErrLockLost", lock.Err())
			}
			if late := closed.Sub(until); late > drift {
				t.Errorf("Done closed %v after Until, want within the drift margin %v", late, drift)
			}
			// The nodes still had the key until it expired by itself: the
			// signal came while nobody else could take it yet.
			if pttl := q.direct[0].PTTL(context.Background(), "leader").Val(); closed.Add(pttl).Before(until) {
				t.Errorf("node 0's key expires at %v, before Until", closed.Add(pttl))
			}
		})
	}
}

// An acquire whose replies are lost on a majority: it fails, and the locks
// it did get on the nodes are released once they answer, so the key is not
// stuck until its ttl.
func TestRedlockRepliesLost(t *testing.T) {
	t.Parallel()
	q := newQuorum(t, 3, dlock.WithNodeTimeout(200*time.Millisecond))
	if lock, err := q.locker.TryObtain(context.Background(), "warm", time.Second); err == nil {
		_ = lock.Release(context.Background())
	}
	remove := []func(){q.nodes[0].Proxy.BlackholeReplies(), q.nodes[1].Proxy.BlackholeReplies()}
	_, err := q.locker.TryObtain(context.Background(), "job", time.Minute)
	var qe *dlock.QuorumError
	if !errors.As(err, &qe) {
		t.Fatalf("TryObtain with replies lost = %v, want a QuorumError", err)
	}
	set := 0
	for _, rdb := range q.direct {
		if rdb.Exists(context.Background(), "job").Val() == 1 {
			set++
		}
	}
	if set == 0 {
		t.Fatal("the scripts did not run on the nodes; the test shows nothing")
	}
	for _, r := range remove {
		r()
	}
	testenv.Eventually(t, 5*time.Second, "the lost acquire cleaned up, the lock free", func() bool {
		lock, err := q.locker.TryObtain(context.Background(), "job", time.Minute)
		if err != nil {
			return false
		}
		_ = lock.Release(context.Background())
		return true
	})
}
