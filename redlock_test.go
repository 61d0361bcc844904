package dlock_test

import (
	"context"
	"errors"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/dlock-go/dlock"
	"github.com/dlock-go/dlock/internal/testenv"
	"github.com/dlock-go/dlock/redistest"
)

// quorumEnv is n redis-servers, a go-redis client to each, and a Redlock
// Client over them.
type quorumEnv struct {
	srvs   []*redistest.Server
	rdbs   []*redis.Client
	locker *dlock.Client
}

// fastFail makes a go-redis client give up quickly on a dead server, so
// tests that kill nodes stay short.
func fastFail(o *redis.Options) {
	o.DialTimeout = 200 * time.Millisecond
	o.MaxRetries = -1
}

// setupQuorum starts n nodes. Their node timeout is generous, so a busy
// test machine does not count a slow node as a dead one, unless opts say
// otherwise.
func setupQuorum(t testing.TB, n int, opts ...dlock.Option) *quorumEnv {
	t.Helper()
	opts = append([]dlock.Option{dlock.WithNodeTimeout(time.Second)}, opts...)
	e := &quorumEnv{srvs: redistest.NewServers(t, n)}
	for _, s := range e.srvs {
		e.rdbs = append(e.rdbs, s.Client(fastFail))
	}
	e.locker = newRedlock(t, e.rdbs, opts...)
	return e
}

// newRedlock returns a Redlock Client on rdbs, closed when the test ends.
func newRedlock(t testing.TB, rdbs []*redis.Client, opts ...dlock.Option) *dlock.Client {
	t.Helper()
	nodes := make([]redis.UniversalClient, len(rdbs))
	for i, r := range rdbs {
		nodes[i] = r
	}
	locker, err := dlock.NewRedlock(nodes, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { locker.Close() })
	return locker
}

// waitUp waits until rdb reaches its restarted server: after failed dials,
// go-redis's pool keeps answering with the last dial error until its
// background dial succeeds, up to a second later.
func waitUp(t testing.TB, rdb *redis.Client) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for rdb.Ping(context.Background()).Err() != nil {
		if time.Now().After(deadline) {
			t.Fatalf("%s not reachable after a restart", rdb.Options().Addr)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// holders counts the nodes whose key holds token.
func (e *quorumEnv) holders(key, token string) int {
	n := 0
	for _, r := range e.rdbs {
		if r.Get(context.Background(), key).Val() == token {
			n++
		}
	}
	return n
}

func TestRedlock(t *testing.T) {
	t.Parallel()
	e := setupQuorum(t, 5)
	key := testenv.Key(t)
	lock, err := e.locker.Obtain(testenv.Timeout(t, 5*time.Second), key, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if n := e.holders(key, lock.Token()); n < 3 {
		t.Errorf("%d nodes hold the lock, want a quorum (3 of 5)", n)
	}
	if lock.Fence() <= 0 {
		t.Errorf("Fence = %d, want > 0", lock.Fence())
	}
	if ttl, err := lock.TTL(context.Background()); err != nil || ttl <= 0 || ttl > time.Minute {
		t.Errorf("TTL = %v, %v", ttl, err)
	}
	if err := lock.Refresh(context.Background(), 2*time.Minute); err != nil {
		t.Errorf("Refresh: %v", err)
	}
	info, err := e.locker.Inspect(context.Background(), key)
	if err != nil || !info.Held || info.Fingerprint != lock.Fingerprint() || info.Fence < lock.Fence() {
		t.Errorf("Inspect = %+v, %v; want held by us with our fence", info, err)
	}

	other := newRedlock(t, e.rdbs, dlock.WithNodeTimeout(time.Second))
	if _, err := other.TryObtain(context.Background(), key, time.Minute); !errors.Is(err, dlock.ErrNotObtained) {
		t.Errorf("TryObtain by another = %v, want ErrNotObtained", err)
	}
	if err := lock.Release(context.Background()); err != nil {
		t.Fatal(err)
	}
	// Release returns once a quorum released; the other nodes follow.
	if n := e.holders(key, lock.Token()); n > 5-3 {
		t.Errorf("%d nodes still hold the lock after Release, want at most 2", n)
	}
	for deadline := time.Now().Add(2 * time.Second); e.holders(key, lock.Token()) > 0; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%d nodes still hold the lock 2s after Release", e.holders(key, lock.Token()))
		}
	}
	next, err := other.TryObtain(context.Background(), key, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if next.Fence() <= lock.Fence() {
		t.Errorf("next fence %d, want > %d", next.Fence(), lock.Fence())
	}
}

// Redlock Clients wait for each other, and never hold a key at once.
func TestRedlockContention(t *testing.T) {
	t.Parallel()
	e := setupQuorum(t, 3)
	key := testenv.Key(t)
	inside := make(chan struct{}, 1)
	errs := make(chan error, 4)
	for range 4 {
		locker := newRedlock(t, e.rdbs, dlock.WithNodeTimeout(time.Second))
		go func() {
			for range 5 {
				err := locker.Do(testenv.Timeout(t, 20*time.Second), key, 5*time.Second, func(context.Context) error {
					select {
					case inside <- struct{}{}:
					default:
						t.Error("two holders at once")
						return nil // the other holder empties inside
					}
					time.Sleep(2 * time.Millisecond)
					<-inside
					return nil
				})
				if err != nil {
					errs <- err
					return
				}
			}
			errs <- nil
		}()
	}
	for range 4 {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
}

// With 2 of 5 nodes down a lock is obtained; with 3 down Obtain fails
// within its deadline and says how the nodes voted.
func TestRedlockNodesDown(t *testing.T) {
	t.Parallel()
	e := setupQuorum(t, 5)
	key := testenv.Key(t)
	e.srvs[0].Kill()
	e.srvs[1].Kill()
	lock, err := e.locker.Obtain(testenv.Timeout(t, 5*time.Second), key, time.Minute)
	if err != nil {
		t.Fatalf("Obtain with 2 of 5 down: %v", err)
	}
	if err := lock.Release(context.Background()); err != nil {
		t.Fatalf("Release with 2 of 5 down: %v", err)
	}

	e.srvs[2].Kill()
	within(t, 2*time.Second, "Obtain with 3 of 5 down", func() {
		_, err = e.locker.Obtain(testenv.Timeout(t, time.Second), key, time.Minute)
	})
	var qe *dlock.QuorumError
	var ne *dlock.NodeError
	if !errors.As(err, &qe) || !errors.As(err, &ne) || errors.Is(err, dlock.ErrNotObtained) {
		t.Fatalf("Obtain with 3 of 5 down = %v, want a QuorumError with the nodes' errors", err)
	}
	if qe.Nodes != 5 || qe.Quorum != 3 || len(qe.Errs) != 3 {
		t.Errorf("QuorumError = %+v, want 5 nodes, quorum 3, 3 node errors", qe)
	}
	t.Log(err)
}

// A paused node does not stall an acquire beyond the node timeout.
func TestRedlockPausedNode(t *testing.T) {
	t.Parallel()
	const nodeTimeout = 50 * time.Millisecond
	e := setupQuorum(t, 3, dlock.WithNodeTimeout(nodeTimeout))
	e.srvs[0].Pause()
	defer e.srvs[0].Resume()
	key := testenv.Key(t)
	var lock *dlock.Lock
	within(t, nodeTimeout+500*time.Millisecond, "Obtain with a paused node", func() {
		var err error
		lock, err = e.locker.Obtain(testenv.Timeout(t, 5*time.Second), key, time.Minute)
		if err != nil {
			t.Fatal(err)
		}
	})
	within(t, nodeTimeout+500*time.Millisecond, "Release with a paused node", func() {
		if err := lock.Release(context.Background()); err != nil {
			t.Error(err)
		}
	})
	// Resumed, the node runs the acquire it had queued, and perhaps the
	// release before it: either way the key does not stay behind.
	e.srvs[0].Resume()
	deadline := time.Now().Add(5 * time.Second)
	for e.rdbs[0].Exists(context.Background(), key).Val() != 0 {
		if time.Now().After(deadline) {
			t.Fatal("the paused node kept the key after the release")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// Fences increase across holders whatever quorum each one gets, with nodes
// killed and restarted (without persistence) in between.
func TestRedlockFenceAcrossShiftingQuorums(t *testing.T) {
	t.Parallel()
	e := setupQuorum(t, 5)
	key := testenv.Key(t)
	lockers := []*dlock.Client{e.locker, newRedlock(t, e.rdbs, dlock.WithNodeTimeout(time.Second))}
	rng := rand.New(rand.NewPCG(1, 2))
	var last int64
	for i := range 12 {
		// Two random nodes down, the others up.
		down := rng.Perm(5)[:2]
		for j, s := range e.srvs {
			isDown := j == down[0] || j == down[1]
			switch {
			case isDown && s.Running():
				s.Kill()
			case !isDown && !s.Running():
				s.Start()
				waitUp(t, e.rdbs[j])
			}
		}
		lock, err := lockers[i%2].Obtain(testenv.Timeout(t, 5*time.Second), key, time.Minute)
		if err != nil {
			for j, s := range e.srvs {
				t.Logf("node %d %s running %v", j, s.Addr(), s.Running())
			}
			t.Fatalf("round %d (nodes %v down): %v", i, down, err)
		}
		if lock.Fence() <= last {
			t.Fatalf("round %d: fence %d after %d, want it larger", i, lock.Fence(), last)
		}
		last = lock.Fence()
		if err := lock.Release(context.Background()); err != nil {
			t.Fatalf("round %d: %v", i, err)
		}
	}
}

// A node that restarts without persistence before the ttl has passed can
// grant a lock a second time: the limit docs/safety.md explains. Delaying
// the restart by more than the ttl prevents it.
func TestRedlockRestartWithoutPersistence(t *testing.T) {
	t.Parallel()
	e := setupQuorum(t, 3)
	key := testenv.Key(t)
	// Long enough for the restarted node's client to reconnect within A's
	// validity: go-redis's pool, after failed dials, answers with the last
	// dial error for up to about a second.
	const ttl = 3 * time.Second
	a, err := e.locker.TryObtain(context.Background(), key, ttl)
	if err != nil {
		t.Fatal(err)
	}
	// A's quorum is nodes 0 and 1: as if node 2 had been down for A's
	// acquire. (Killing node 2 instead let A's call to it, still retrying
	// the dial in the background, land once node 2 was back.) A's round
	// returns once two nodes agree, so its call to node 2 may still be on
	// its way: wait for it to land before deleting, or it lands after.
	testenv.Eventually(t, 5*time.Second, "A's key on all three nodes", func() bool {
		return e.holders(key, a.Token()) == 3
	})
	if err := e.rdbs[2].Del(context.Background(), key).Err(); err != nil {
		t.Fatal(err)
	}
	other := newRedlock(t, e.rdbs, dlock.WithNodeTimeout(time.Second))

	t.Run("immediate restart", func(t *testing.T) {
		e.srvs[1].Restart() // loses A's key at once
		waitUp(t, e.rdbs[1])
		b, err := other.TryObtain(context.Background(), key, ttl)
		if err != nil {
			t.Fatalf("B: %v", err)
		}
		if time.Now().Before(a.Until()) {
			t.Logf("as documented: A holds until %v and B got the lock too (nodes 1 and 2)", time.Until(a.Until()))
		} else {
			t.Errorf("A's validity had ended; the test did not show the double grant")
		}
		_ = b.Release(context.Background())
	})

	t.Run("restart delayed past the ttl", func(t *testing.T) {
		a, err := e.locker.Obtain(testenv.Timeout(t, 5*time.Second), key, ttl)
		if err != nil {
			t.Fatal(err)
		}
		holders := e.holders(key, a.Token())
		e.srvs[1].Kill()
		time.Sleep(ttl) // the mitigation: stay down longer than the longest ttl
		e.srvs[1].Start()
		b, err := other.Obtain(testenv.Timeout(t, 5*time.Second), key, ttl)
		if err != nil {
			t.Fatalf("B: %v", err)
		}
		if got := time.Now(); got.Before(a.Until()) {
			t.Errorf("B got the lock while A held it (%d nodes), %v before A's validity ended", holders, a.Until().Sub(got))
		}
		_ = b.Release(context.Background())
	})
}

// Auto-renew works on a quorum, and a lock that a quorum loses is lost.
func TestRedlockAutoRenew(t *testing.T) {
	t.Parallel()
	e := setupQuorum(t, 3)
	key := testenv.Key(t)
	const ttl = 300 * time.Millisecond
	lock, err := e.locker.TryObtain(context.Background(), key, ttl, dlock.WithAutoRenew(true))
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(3 * ttl)
	if !isOpen(lock) {
		t.Fatalf("renewed Redlock lock ended: %v", lock.Err())
	}
	e.rdbs[0].Del(context.Background(), key) // one node loses it: still a quorum
	time.Sleep(ttl)
	if !isOpen(lock) {
		t.Fatalf("lost with 2 of 3 nodes holding it: %v", lock.Err())
	}
	e.rdbs[1].Del(context.Background(), key)
	waitDone(t, lock, 3*ttl)
	if err := lock.Err(); !errors.Is(err, dlock.ErrLockLost) {
		t.Errorf("Err = %v, want ErrLockLost", err)
	}
}

func TestRedlockBadInputs(t *testing.T) {
	t.Parallel()
	srv := redistest.NewServer(t)
	rdb := srv.Client()
	var nilClient *redis.Client
	cases := []struct {
		name  string
		nodes []redis.UniversalClient
		opts  []dlock.Option
		want  error
	}{
		{"no nodes", nil, nil, dlock.ErrInvalidOption},
		{"nil node", []redis.UniversalClient{rdb, nil}, nil, dlock.ErrNilClient},
		{"typed nil node", []redis.UniversalClient{rdb, nilClient}, nil, dlock.ErrNilClient},
		{"same node twice", []redis.UniversalClient{rdb, rdb}, nil, dlock.ErrInvalidOption},
		{"bad node timeout", []redis.UniversalClient{rdb}, []dlock.Option{dlock.WithNodeTimeout(0)}, dlock.ErrInvalidOption},
		{"nil option", []redis.UniversalClient{rdb}, []dlock.Option{nil}, dlock.ErrInvalidOption},
	}
	for _, tc := range cases {
		if _, err := dlock.NewRedlock(tc.nodes, tc.opts...); !errors.Is(err, tc.want) {
			t.Errorf("%s: NewRedlock = %v, want %v", tc.name, err, tc.want)
		}
	}

	locker := newRedlock(t, []*redis.Client{rdb})
	if _, err := locker.Obtain(context.Background(), testenv.Key(t), time.Second, dlock.WithFair()); !errors.Is(err, dlock.ErrInvalidOption) {
		t.Errorf("Obtain(WithFair) on a Redlock = %v, want ErrInvalidOption", err)
	}
}

// A Redlock waiter is woken by the release, though its Backoff says a
// minute, also with a node down.
func TestRedlockWakeOnRelease(t *testing.T) {
	t.Parallel()
	e := setupQuorum(t, 3)
	key := testenv.Key(t)
	e.srvs[2].Kill()
	holder, err := e.locker.TryObtain(context.Background(), key, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	waiter := newRedlock(t, e.rdbs, dlock.WithNodeTimeout(time.Second))
	got := obtainAsync(t, waiter, key, noPolling)
	channel := "dlock:fence{" + key + "}"
	deadline := time.Now().Add(5 * time.Second)
	for e.rdbs[0].PubSubNumSub(context.Background(), channel).Val()[channel] == 0 ||
		e.rdbs[1].PubSubNumSub(context.Background(), channel).Val()[channel] == 0 {
		if time.Now().After(deadline) {
			t.Fatal("the waiter did not subscribe on the live nodes")
		}
		time.Sleep(time.Millisecond)
	}
	time.Sleep(20 * time.Millisecond)
	released := time.Now()
	if err := holder.Release(context.Background()); err != nil {
		t.Fatal(err)
	}
	if at := <-got; at.IsZero() || at.Sub(released) > 2*time.Second {
		t.Errorf("the waiter got the lock %v after the release, want it woken by the release", at.Sub(released))
	}
}

// With a node down, a lock held by another is "held", not a failure:
// Obtain waits for it, and gets it once it is released.
func TestRedlockHeldWithNodeDown(t *testing.T) {
	t.Parallel()
	e := setupQuorum(t, 3)
	key := testenv.Key(t)
	holder, err := e.locker.TryObtain(context.Background(), key, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	e.srvs[0].Kill()
	other := newRedlock(t, e.rdbs, dlock.WithNodeTimeout(time.Second))
	if _, err := other.TryObtain(context.Background(), key, time.Minute); !errors.Is(err, dlock.ErrNotObtained) {
		t.Fatalf("TryObtain with a node down while held = %v, want ErrNotObtained", err)
	}
	time.AfterFunc(100*time.Millisecond, func() { _ = holder.Release(context.Background()) })
	lock, err := other.Obtain(testenv.Timeout(t, 5*time.Second), key, time.Minute)
	if err != nil {
		t.Fatalf("Obtain with a node down, released meanwhile: %v", err)
	}
	_ = lock.Release(context.Background())
}

// A Redlock acquire is a SET NX on each node: a key of another type is
// ErrWrongType, a held lock ErrNotObtained (without the holder's ttl, which
// SET does not tell).
func TestRedlockAcquireReplies(t *testing.T) {
	t.Parallel()
	e := setupQuorum(t, 3)
	ctx := context.Background()
	key := testenv.Key(t)
	for _, r := range e.rdbs {
		r.LPush(ctx, key+":list", "x")
	}
	if _, err := e.locker.TryObtain(ctx, key+":list", time.Minute); !errors.Is(err, dlock.ErrWrongType) {
		t.Errorf("TryObtain of a list = %v, want ErrWrongType", err)
	}
	holder, err := e.locker.TryObtain(ctx, key, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	_, err = e.locker.TryObtain(ctx, key, time.Minute)
	if !errors.Is(err, dlock.ErrNotObtained) || !strings.HasSuffix(err.Error(), "is held by another holder") {
		t.Errorf("TryObtain while held = %v, want ErrNotObtained: held by another holder", err)
	}
	if holder.Fence() <= 0 {
		t.Errorf("Fence = %d, want > 0", holder.Fence())
	}
}

// A Redlock lock lost before its first Fence has no fence: 0.
func TestRedlockFenceOfLostLock(t *testing.T) {
	t.Parallel()
	e := setupQuorum(t, 3)
	key := testenv.Key(t)
	lock, err := e.locker.TryObtain(context.Background(), key, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	// The acquire's third call may land after TryObtain returns: wait for
	// it, or it could undo a delete below.
	testenv.Eventually(t, 5*time.Second, "the key on all three nodes", func() bool {
		return e.holders(key, lock.Token()) == 3
	})
	e.rdbs[0].Del(context.Background(), key)
	e.rdbs[1].Del(context.Background(), key)
	if f := lock.Fence(); f != 0 {
		t.Errorf("Fence of a lock held on 1 of 3 nodes = %d, want 0", f)
	}
}

// A Redlock attempt that fails takes back the nodes that granted it (those
// that answered in time before it returns, so that the caller's next
// attempt does not find them taken by this one), and quietly: the lock is
// still another's, and a release message would only wake waiters for
// nothing.
func TestRedlockFailedAttemptTakenBack(t *testing.T) {
	t.Parallel()
	e := setupQuorum(t, 3)
	ctx := context.Background()
	key := testenv.Key(t)
	for _, r := range e.rdbs[:2] {
		r.Set(ctx, key, "another holder", time.Minute)
	}
	channel := "dlock:fence{" + key + "}"
	bystander := e.rdbs[2].Subscribe(ctx, channel)
	defer bystander.Close()
	if _, err := bystander.Receive(ctx); err != nil { // the confirmation
		t.Fatal(err)
	}
	if _, err := e.locker.TryObtain(ctx, key, time.Minute); !errors.Is(err, dlock.ErrNotObtained) {
		t.Fatalf("TryObtain held on 2 of 3 = %v, want ErrNotObtained", err)
	}
	for deadline := time.Now().Add(2 * time.Second); e.rdbs[2].Exists(ctx, key).Val() != 0; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the node that granted the failed attempt still has the key 2s later")
		}
	}
	if msg, err := bystander.ReceiveTimeout(ctx, 100*time.Millisecond); err == nil {
		t.Errorf("taking the failed attempt back published %v, want nothing", msg)
	}
}

// Scan finds the locks of a Redlock, each once, before any Fence was asked
// for, through the side key each acquire leaves; a fence handed out later
// shows in Inspect.
func TestRedlockScan(t *testing.T) {
	t.Parallel()
	e := setupQuorum(t, 3)
	ctx := context.Background()
	key := testenv.Key(t)
	var held []*dlock.Lock
	for _, k := range []string{key + ":a", key + ":b"} {
		lock, err := e.locker.TryObtain(ctx, k, time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		held = append(held, lock)
	}
	var got []string
	for info, err := range e.locker.Scan(testenv.Timeout(t, 10*time.Second), key+":*") {
		if err != nil {
			t.Fatal(err)
		}
		if !info.Held || info.Fingerprint == "" {
			t.Errorf("Scan yielded %+v, want a held lock with a fingerprint", info)
		}
		got = append(got, info.Key)
	}
	slices.Sort(got)
	if want := []string{key + ":a", key + ":b"}; !slices.Equal(got, want) {
		t.Errorf("Scan = %q, want %q", got, want)
	}
	fence := held[0].Fence()
	if info, err := e.locker.Inspect(ctx, key+":a"); err != nil || info.Fence != fence || fence <= 0 {
		t.Errorf("Inspect after Fence = %+v, %v; want fence %d", info, err, fence)
	}
}
