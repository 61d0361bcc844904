package faults_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/dlock-go/dlock"
	"github.com/dlock-go/dlock/internal/door"
	"github.com/dlock-go/dlock/internal/testenv"
	"github.com/dlock-go/dlock/redistest"
)

// Every mutating call of the core, sent while Redis is paused past
// go-redis's ReadTimeout, with go-redis's default options: go-redis sends
// it again on another connection, and every copy runs once Redis is back.
// Between the copies another client acts (it takes the lock the first copy
// released, or tries for the one the first copy took). Each call must have
// one effect and answer truthfully. The calls share one pause of Redis.

// resentCall is one call sent while Redis is paused.
type resentCall struct {
	name    string
	call    func(ctx context.Context) error                    // the call, while Redis is paused
	between func(ctx context.Context)                          // another client's, after the first copy; may be nil
	check   func(t *testing.T, ctx context.Context, err error) // once Redis is back; err is call's
}

// resendEnv is one server and the clients of the calls: each call gets a
// go-redis client with the default options (and a dlock Client on it) of
// its own, its pool ready, so that a copy goes out at once on a connection
// already set up.
type resendEnv struct {
	t     *testing.T
	srv   *redistest.Server
	other *dlock.Client // for the betweens: waits long, never resends
	admin *redis.Client // a client with long timeouts and no retries
}

func newResendEnv(t *testing.T) *resendEnv {
	srv := redistest.NewServer(t)
	admin := srv.Client(patient)
	warm(t, admin, 12)
	other := dlock.New(admin)
	t.Cleanup(func() { other.Close() })
	e := &resendEnv{t: t, srv: srv, admin: admin, other: other}
	e.loadScripts()
	return e
}

// patient gives a client long timeouts and no retries: its commands sent
// while Redis is paused run once, when it is back.
func patient(o *redis.Options) {
	o.ReadTimeout, o.WriteTimeout, o.MaxRetries = 30*time.Second, 30*time.Second, -1
}

// locker returns a dlock Client on a go-redis client of srv with the
// default options, its pool warmed.
func locker(t *testing.T, srv *redistest.Server, opts ...dlock.Option) *dlock.Client {
	rdb := srv.Client()
	warm(t, rdb, 4)
	c := dlock.New(rdb, opts...)
	t.Cleanup(func() { c.Close() })
	return c
}

// warm makes rdb open n connections.
func warm(t *testing.T, rdb *redis.Client, n int) {
	var wg sync.WaitGroup
	for range n {
		wg.Go(func() { _ = rdb.Do(context.Background(), "BLPOP", "warm:"+t.Name(), "0.1").Err() })
	}
	wg.Wait()
}

// loadScripts runs every script once, so that no copy of a call fails with
// NOSCRIPT and is sent again with its source after Redis is back.
func (e *resendEnv) loadScripts() {
	ctx := context.Background()
	must := func(err error) {
		if err != nil {
			e.t.Fatal(err)
		}
	}
	lock, err := e.other.TryObtain(ctx, "{warm}:lock", time.Minute)
	must(err)
	must(lock.Refresh(ctx, time.Minute))
	must(lock.ReleaseAfter(ctx, time.Millisecond))
	lock, err = e.other.TryObtain(ctx, "{warm}:lock2", time.Minute)
	must(err)
	must(door.ReleaseStoring(ctx, lock, "{warm}:result", []byte("w"), time.Minute))
	permit, err := e.other.Semaphore("warm:sem", 1).TryAcquire(ctx, time.Minute)
	must(err)
	must(permit.Refresh(ctx, time.Minute))
	must(permit.Release(ctx))
}

func (e *resendEnv) get(ctx context.Context, key string) string {
	return e.admin.Get(ctx, key).Val()
}

// tokenOf returns the holder's token of a lock's value in Redis: the token,
// then a colon and the time of the acquire (tokens hold no colon).
func tokenOf(v string) string {
	token, _, _ := strings.Cut(v, ":")
	return token
}

// lockCalls returns the calls on a lock: acquire, release, refresh,
// ReleaseAfter and ReleaseStoring.
func (e *resendEnv) lockCalls() []resentCall {
	t, ctx := e.t, context.Background()
	var calls []resentCall

	{ // acquire: the copy finds the caller's token; another client's SET NX between them fails
		c, key := locker(t, e.srv), "resend:acquire"
		var lock *dlock.Lock
		var taken bool
		calls = append(calls, resentCall{
			name:    "acquire",
			call:    func(ctx context.Context) (err error) { lock, err = c.TryObtain(ctx, key, time.Minute); return err },
			between: func(ctx context.Context) { taken = e.admin.SetNX(ctx, key, "other", time.Minute).Val() },
			check: func(t *testing.T, ctx context.Context, err error) {
				if taken && errors.Is(err, dlock.ErrNotObtained) && e.get(ctx, key) == "other" {
					t.Skip("the other client's SET NX came first (a busy machine): the acquire found it held, truthfully")
				}
				if err != nil {
					t.Fatalf("TryObtain = %v, want the lock", err)
				}
				if taken {
					t.Error("another client's SET NX took the lock the acquire holds")
				}
				if v := e.get(ctx, key); tokenOf(v) != lock.Token() {
					t.Errorf("the key holds %q, want the holder's token", v)
				}
				if v := e.get(ctx, "dlock:fence{"+key+"}"); v != "" {
					t.Errorf("the fence key holds %q after the acquire, which hands out none", v)
				}
			},
		})
	}
	{ // fence: the copy finds the fence handed out, and hands out the same
		c, key := locker(t, e.srv), "resend:fence"
		if warm := mustObtain(t, c, "resend:fence-warm"); warm.Fence() == 0 { // loads raise_fence.lua
			t.Fatal("the warm-up lock got no fence")
		}
		lock := mustObtain(t, c, key)
		var fence int64
		calls = append(calls, resentCall{
			name: "fence",
			call: firstFence(lock, &fence),
			check: func(t *testing.T, ctx context.Context, err error) {
				if err != nil {
					t.Fatalf("Fence: %v", err)
				}
				if v, want := e.get(ctx, "dlock:fence{"+key+"}"), fmt.Sprint(fence)+":"+lock.Token()[:8]; v != want {
					t.Errorf("the fence key holds %q, want %q: one fence, the one handed out", v, want)
				}
			},
		})
	}
	{ // release: the copy finds the lock another client's; it released it all the same
		c, key := locker(t, e.srv), "resend:release"
		lock := mustObtain(t, c, key)
		var taken bool
		calls = append(calls, resentCall{
			name:    "release",
			call:    lock.Release,
			between: func(ctx context.Context) { taken = e.admin.SetNX(ctx, key, "other", time.Minute).Val() },
			check: func(t *testing.T, ctx context.Context, err error) {
				if err != nil {
					t.Errorf("Release = %v, want nil: it released the lock", err)
				}
				if err := lock.Err(); !errors.Is(err, dlock.ErrReleased) {
					t.Errorf("Err = %v, want ErrReleased", err)
				}
				if v := e.get(ctx, key); (taken && v != "other") || (!taken && v != "") {
					t.Errorf("the key holds %q (taken by the other client: %v), want the other client's lock or nothing", v, taken)
				}
			},
		})
	}
	{ // refresh: both copies extend; the lock stays the caller's
		c, key := locker(t, e.srv), "resend:refresh"
		lock := mustObtain(t, c, key)
		calls = append(calls, resentCall{
			name: "refresh",
			call: func(ctx context.Context) error { return lock.Refresh(ctx, 2*time.Minute) },
			check: func(t *testing.T, ctx context.Context, err error) {
				if err != nil {
					t.Errorf("Refresh = %v, want nil", err)
				}
				if ttl := e.admin.PTTL(ctx, key).Val(); tokenOf(e.get(ctx, key)) != lock.Token() || ttl <= time.Minute || ttl > 2*time.Minute {
					t.Errorf("the key holds %q for %v, want the holder's token for at most 2m", e.get(ctx, key), ttl)
				}
			},
		})
	}
	{ // ReleaseAfter: the copy does not keep the lock longer than asked
		c, key := locker(t, e.srv), "resend:release-after"
		lock := mustObtain(t, c, key)
		calls = append(calls, resentCall{
			name: "release after",
			call: func(ctx context.Context) error { return lock.ReleaseAfter(ctx, 30*time.Second) },
			check: func(t *testing.T, ctx context.Context, err error) {
				if err != nil {
					t.Errorf("ReleaseAfter = %v, want nil", err)
				}
				if err := lock.Err(); !errors.Is(err, dlock.ErrReleased) {
					t.Errorf("Err = %v, want ErrReleased", err)
				}
				if ttl := e.admin.PTTL(ctx, key).Val(); ttl > 30*time.Second || ttl <= 0 {
					t.Errorf("the key lives %v more, want at most 30s", ttl)
				}
			},
		})
	}
	{ // ReleaseStoring: the first copy stores; the copy finds the lock another's and says stored
		c, key, result := locker(t, e.srv), "{resend:storing}:lock", "{resend:storing}:result"
		lock := mustObtain(t, c, key)
		var taken bool
		calls = append(calls, resentCall{
			name: "release storing",
			call: func(ctx context.Context) error {
				return door.ReleaseStoring(ctx, lock, result, []byte("done"), time.Minute)
			},
			between: func(ctx context.Context) { taken = e.admin.SetNX(ctx, key, "other", time.Minute).Val() },
			check: func(t *testing.T, ctx context.Context, err error) {
				if err != nil {
					t.Errorf("ReleaseStoring = %v, want nil: the value is stored", err)
				}
				if v := e.get(ctx, result); v != "done" {
					t.Errorf("stored %q, want done", v)
				}
				if v := e.get(ctx, key); (taken && v != "other") || (!taken && v != "") {
					t.Errorf("the key holds %q (taken by the other client: %v), want the other client's lock or nothing", v, taken)
				}
			},
		})
	}
	_ = ctx
	return calls
}

// holdCalls returns the calls on shared holds: a semaphore's acquire and
// release, an RW lock's read acquire and write release.
func (e *resendEnv) holdCalls() []resentCall {
	t, ctx := e.t, context.Background()
	var calls []resentCall
	{ // semaphore acquire: one permit for both copies; a rival between them finds the limit reached
		c, name := locker(t, e.srv), "resend:sem:acquire"
		var permit *dlock.Lock
		var rival error
		calls = append(calls, resentCall{
			name: "semaphore acquire",
			call: func(ctx context.Context) (err error) {
				permit, err = c.Semaphore(name, 1).TryAcquire(ctx, time.Minute)
				return err
			},
			between: func(ctx context.Context) { _, rival = e.other.Semaphore(name, 1).TryAcquire(ctx, time.Minute) },
			check: func(t *testing.T, ctx context.Context, err error) {
				if rival == nil && errors.Is(err, dlock.ErrNotObtained) && e.admin.ZCard(ctx, name).Val() == 1 {
					t.Skip("the rival came first (a busy machine): the acquire found the limit reached, truthfully")
				}
				if err != nil {
					t.Fatalf("TryAcquire = %v, want a permit", err)
				}
				if !errors.Is(rival, dlock.ErrNotObtained) {
					t.Errorf("the rival's TryAcquire = %v, want ErrNotObtained", rival)
				}
				if n := e.admin.ZCard(ctx, name).Val(); n != 1 {
					t.Errorf("%d permits held, want 1", n)
				}
				if _, err := permit.TTL(ctx); err != nil {
					t.Errorf("the permit: %v, want held", err)
				}
			},
		})
	}
	{ // semaphore release: a rival takes the freed permit between the copies
		c, name := locker(t, e.srv), "resend:sem:release"
		permit, err := c.Semaphore(name, 1).TryAcquire(ctx, time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		var rival *dlock.Lock
		var rivalErr error
		calls = append(calls, resentCall{
			name:    "semaphore release",
			call:    permit.Release,
			between: func(ctx context.Context) { rival, rivalErr = e.other.Semaphore(name, 1).TryAcquire(ctx, time.Minute) },
			check: func(t *testing.T, ctx context.Context, err error) {
				if err != nil {
					t.Errorf("Release = %v, want nil", err)
				}
				if err := permit.Err(); !errors.Is(err, dlock.ErrReleased) {
					t.Errorf("Err = %v, want ErrReleased", err)
				}
				if errors.Is(rivalErr, dlock.ErrNotObtained) {
					t.Skip("the rival came first (a busy machine), and found the permit held, truthfully")
				}
				if rivalErr != nil {
					t.Fatalf("the rival's TryAcquire = %v, want the freed permit", rivalErr)
				}
				if _, err := rival.TTL(ctx); err != nil {
					t.Errorf("the rival's permit: %v, want it untouched", err)
				}
			},
		})
	}
	{ // RW read acquire: one hold for both copies; a writer between them is refused
		c, name := locker(t, e.srv), "resend:rw:read"
		var writer error
		calls = append(calls, resentCall{
			name:    "rw read acquire",
			call:    func(ctx context.Context) (err error) { _, err = c.RWMutex(name).TryRLock(ctx, time.Minute); return err },
			between: func(ctx context.Context) { _, writer = e.other.RWMutex(name).TryLock(ctx, time.Minute) },
			check: func(t *testing.T, ctx context.Context, err error) {
				if writer == nil && errors.Is(err, dlock.ErrNotObtained) {
					t.Skip("the writer came first (a busy machine): the reader was refused, truthfully")
				}
				if err != nil {
					t.Fatalf("TryRLock = %v, want a read hold", err)
				}
				if !errors.Is(writer, dlock.ErrNotObtained) {
					t.Errorf("the writer's TryLock = %v, want ErrNotObtained", writer)
				}
				if n := e.admin.ZCard(ctx, name).Val(); n != 1 {
					t.Errorf("%d holds, want 1", n)
				}
			},
		})
	}
	{ // RW write release: a reader takes the lock between the copies
		c, name := locker(t, e.srv), "resend:rw:write"
		hold, err := c.RWMutex(name).TryLock(ctx, time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		var readerErr error
		calls = append(calls, resentCall{
			name:    "rw write release",
			call:    hold.Release,
			between: func(ctx context.Context) { _, readerErr = e.other.RWMutex(name).TryRLock(ctx, time.Minute) },
			check: func(t *testing.T, _ context.Context, err error) {
				if err != nil {
					t.Errorf("Release = %v, want nil", err)
				}
				if err := hold.Err(); !errors.Is(err, dlock.ErrReleased) {
					t.Errorf("Err = %v, want ErrReleased", err)
				}
				if readerErr != nil && !errors.Is(readerErr, dlock.ErrNotObtained) {
					t.Errorf("the reader's TryRLock = %v, want the freed lock, or ErrNotObtained if it came first", readerErr)
				}
			},
		})
	}
	return calls
}

// firstFence returns a call that asks lock for its first fence, into
// *fence: its one round (two on a Redlock) is what the pause catches.
func firstFence(lock *dlock.Lock, fence *int64) func(context.Context) error {
	return func(context.Context) error {
		if *fence = lock.Fence(); *fence == 0 {
			return errors.New("no fence")
		}
		return nil
	}
}

// redlockFence returns the first Fence of a Redlock lock, whose two rounds
// wait for the nodes (the node timeout outlasts the pause): every node
// ends with the fence handed out, and its holder's tag.
func redlockFence(t *testing.T, nodes []*redistest.Server) resentCall {
	var clients []redis.UniversalClient
	for _, srv := range nodes {
		rdb := srv.Client()
		warm(t, rdb, 4)
		clients = append(clients, rdb)
	}
	c, err := dlock.NewRedlock(clients, dlock.WithNodeTimeout(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	warmLock, err := c.TryObtain(context.Background(), "resend:warm", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if warmLock.Fence() == 0 { // loads raise_fence.lua
		t.Fatal("the warm-up lock got no fence")
	}
	key := "resend:redlock"
	lock := mustObtain(t, c, key)
	var fence int64
	return resentCall{
		name: "redlock fence",
		call: firstFence(lock, &fence),
		check: func(t *testing.T, ctx context.Context, err error) {
			if err != nil {
				t.Fatalf("Fence: %v", err)
			}
			// A quorum stores the fence handed out, with the holder's tag.
			at := 0
			var stored []string
			for _, srv := range nodes {
				v := srv.Client(patient).Get(ctx, "dlock:fence{"+key+"}").Val()
				stored = append(stored, v)
				if v == fmt.Sprint(fence)+":"+lock.Token()[:8] {
					at++
				}
			}
			if at < 2 {
				t.Errorf("the nodes store the fences %q, want %d on a quorum", stored, fence)
			}
		},
	}
}

func mustObtain(t *testing.T, c *dlock.Client, key string) *dlock.Lock {
	t.Helper()
	lock, err := c.TryObtain(context.Background(), key, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	return lock
}

func TestCallsResentByTheRedisClient(t *testing.T) {
	e := newResendEnv(t)
	nodes := redistest.NewServers(t, 3)
	calls := append(e.lockCalls(), e.holdCalls()...)
	calls = append(calls, redlockFence(t, nodes))

	before := testenv.EvalshaCalls(t, e.admin)
	paused := append([]*redistest.Server{e.srv}, nodes...)
	for _, srv := range paused {
		srv.Pause()
	}
	start := time.Now()
	errs := make([]error, len(calls))
	var wg sync.WaitGroup
	for i, c := range calls {
		wg.Go(func() { errs[i] = c.call(context.Background()) })
	}
	time.Sleep(time.Second) // the first copies are on their way
	var betweens sync.WaitGroup
	for _, c := range calls {
		if c.between != nil {
			betweens.Go(func() { c.between(context.Background()) })
		}
	}
	time.Sleep(testenv.ResendPause - time.Since(start)) // go-redis sends the calls again
	for _, srv := range paused {
		srv.Resume()
	}
	wg.Wait()
	betweens.Wait()
	// Every call but the Redlock's runs one EVALSHA on the server per copy,
	// and so do the betweens that go through dlock.
	if n, want := testenv.EvalshaCalls(t, e.admin)-before, 2*(len(calls)-1)+4; n < want {
		t.Errorf("the server ran %d EVALSHA, want %d or more: go-redis did not send every call again, and the test shows little", n, want)
	}
	for i, c := range calls {
		t.Run(strings.ReplaceAll(c.name, " ", "_"), func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			c.check(t, ctx, errs[i])
		})
	}
}
