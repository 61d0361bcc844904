package faults_test

import (
	"cmp"
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/dlock-go/dlock"
	"github.com/dlock-go/dlock/faults"
	"github.com/dlock-go/dlock/redistest"
)

// The fenced-resource checker: workers, each with a dlock Client of its
// own, take turns at one lock, half of the time with Obtain and auto-renew,
// half with Do, and write to a fenced resource (history) while they hold
// it, checking Lock.Err and Lock.Until before each write; meanwhile a
// schedule of faults runs. history.check judges what they did: no stale
// write accepted, fences in the order of the grants, and no two holders at
// once unless Redis lost data meanwhile. The criteria are about order only,
// never about how long anything took.

const (
	checkTTL     = 400 * time.Millisecond
	checkWorkers = 4
	checkFor     = 3 * time.Second // how long each fault schedule runs
	writes       = 3               // per holding, at most
	writeEvery   = 20 * time.Millisecond
	checkKey     = "checked"
)

// checkerOptions are the options of the workers' go-redis clients: short
// timeouts, no retries, one dial per attempt, and a pool too large for
// go-redis's dial circuit breaker ever to open: it would hide a restarted
// server for a second, and leave a probing goroutine behind.
func checkerOptions(o *redis.Options) {
	o.DialTimeout = 200 * time.Millisecond
	o.ReadTimeout = 200 * time.Millisecond
	o.WriteTimeout = 200 * time.Millisecond
	o.MaxRetries = -1
	o.DialerRetries = 1
	o.PoolSize = 1 << 16
}

// A checker is the workers of one scenario and what they did.
type checker struct {
	h       history
	lockers []*dlock.Client
	// pause, if set, is asked after each check whether the worker pauses
	// there (see pauseHolder); it reports whether another holding wrote
	// meanwhile, and then the worker makes one stale write
	pause func(worker int, hd *holding) bool
	gap   time.Duration // between two writes of a holding; writeEvery if 0
	// fresh, if set, makes a new Client for each attempt of a worker, and
	// returns it with what closes it; lockers is then unused
	fresh func() (*dlock.Client, func())
	// Redlock: the nodes' servers, read around the proxies to count where
	// a holder's token is, and the size of a quorum
	direct []*redis.Client
	need   int
}

// singleChecker starts a redis-server, and workers that reach it through a
// proxy each, with clients of checkerOptions and then opts.
func singleChecker(t *testing.T, opts ...func(*redis.Options)) (*checker, *redistest.Server, []*faults.Proxy) {
	t.Helper()
	srv := redistest.NewServer(t)
	c := &checker{}
	var proxies []*faults.Proxy
	for range checkWorkers {
		p := faults.New(t, srv.Addr())
		locker := dlock.New(p.Client(append([]func(*redis.Options){checkerOptions}, opts...)...))
		t.Cleanup(func() { locker.Close() })
		proxies = append(proxies, p)
		c.lockers = append(c.lockers, locker)
	}
	return c, srv, proxies
}

// redlockChecker starts five nodes, and workers that each reach them with a
// Redlock Client of their own.
func redlockChecker(t *testing.T) (*checker, []faults.Node) {
	t.Helper()
	nodes := faults.Nodes(t, 5)
	c := &checker{need: 3}
	for _, n := range nodes {
		c.direct = append(c.direct, n.Server.Client(checkerOptions))
	}
	for range checkWorkers {
		var clients []redis.UniversalClient
		for _, n := range nodes {
			clients = append(clients, n.Proxy.Client(checkerOptions))
		}
		locker, err := dlock.NewRedlock(clients, dlock.WithNodeTimeout(dlock.DefaultNodeTimeout))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { locker.Close() })
		c.lockers = append(c.lockers, locker)
	}
	return c, nodes
}

// run runs the workers while schedule, called on the test's goroutine,
// injects faults until its deadline; schedule must leave Redis up. Then it
// judges the history, and fails the test for any stale write accepted,
// fences out of order, or, unless lossy, two holders at once.
func (c *checker) run(t *testing.T, schedule func(deadline time.Time)) verdict {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	stop := func() {
		cancel()
		wg.Wait()
	}
	defer stop() // also if schedule stops the test
	for i := range checkWorkers {
		wg.Go(func() { c.work(ctx, i) })
	}
	schedule(time.Now().Add(checkFor))
	stop()
	v := c.h.check(max(c.need, 1))
	t.Logf("%d holdings, %d writes accepted, %d refused; %d stale writes of paused holders refused; %d overlaps while Redis lost data",
		v.holdings, v.accepted, v.refused, v.pausedRefused, v.excused)
	if v.holdings == 0 {
		// Not a failure: on a machine too busy for the workers to get the
		// lock at all, nothing could go wrong either.
		t.Log("no worker ever held the lock: the scenario checked nothing")
	}
	if len(v.stale) > 0 {
		t.Errorf("%d stale writes accepted:\n%s", len(v.stale), strings.Join(v.stale, "\n"))
	}
	if len(v.fenceOrder) > 0 {
		t.Errorf("%d pairs of holdings with fences out of the order of their grants:\n%s", len(v.fenceOrder), strings.Join(v.fenceOrder, "\n"))
	}
	if len(v.minority) > 0 {
		t.Errorf("%d Redlock holders valid by their own account on fewer nodes than a quorum:\n%s",
			len(v.minority), strings.Join(v.minority, "\n"))
	}
	if len(v.storeFaults) > 0 {
		t.Errorf("%d writes the resource got wrong:\n%s", len(v.storeFaults), strings.Join(v.storeFaults, "\n"))
	}
	if len(v.overlaps) > 0 {
		t.Errorf("%d times two holders at once, with no data lost:\n%s", len(v.overlaps), strings.Join(v.overlaps, "\n"))
	}
	return v
}

// work takes the lock again and again until ctx ends, half of the time
// with Obtain, half with Do, and holds it as hold says.
func (c *checker) work(ctx context.Context, worker int) {
	for n := 0; ctx.Err() == nil; n++ {
		if c.fresh != nil {
			locker, done := c.fresh()
			c.attempt(ctx, worker, n, locker)
			done()
		} else {
			c.attempt(ctx, worker, n, c.lockers[worker])
		}
	}
}

// attempt is a worker's n-th attempt to take the lock with locker: with
// Obtain and auto-renew when n is even, with Do when it is odd.
func (c *checker) attempt(ctx context.Context, worker, n int, locker *dlock.Client) {
	asked := time.Now()
	octx, cancel := context.WithTimeout(ctx, 2*checkTTL)
	defer cancel()
	var err error
	if n%2 == 0 {
		var lock *dlock.Lock
		lock, err = locker.Obtain(octx, checkKey, checkTTL, dlock.WithAutoRenew(true))
		if err == nil {
			c.hold(worker, lock, asked)
			rctx, rcancel := context.WithTimeout(context.Background(), checkTTL)
			_ = lock.Release(rctx)
			rcancel()
		}
	} else {
		err = locker.Do(octx, checkKey, checkTTL, func(ctx context.Context) error {
			lock, _ := dlock.LockFromContext(ctx)
			c.hold(worker, lock, asked)
			return nil
		})
	}
	if err != nil && ctx.Err() == nil {
		time.Sleep(writeEvery) // Redis is down: do not spin
	}
}

// hold writes to the resource while the lock is ours, up to writes times.
func (c *checker) hold(worker int, lock *dlock.Lock, asked time.Time) {
	hd := c.h.begin(worker, asked, time.Now(), lock.Fence())
	for range writes {
		now := time.Now()
		if lock.Err() != nil || !now.Before(lock.Until()) {
			return
		}
		c.h.stillMine(hd, now)
		if c.pause != nil && c.pause(worker, hd) {
			c.h.pausedWrite(hd) // as a paused process does: no check after the pause
			return
		}
		c.h.write(hd)
		c.count(hd, lock)
		time.Sleep(cmp.Or(c.gap, writeEvery))
	}
}

// count counts the Redlock nodes that hold lock's token, and notes the
// count if the lock is still valid after it: the nodes that granted its
// last acquire or refresh keep the token at least until then.
func (c *checker) count(hd *holding, lock *dlock.Lock) {
	if c.direct == nil {
		return
	}
	n := 0
	for _, rdb := range c.direct {
		ctx, cancel := context.WithTimeout(context.Background(), checkTTL)
		if rdb.Get(ctx, checkKey).Val() == lock.Token() {
			n++
		}
		cancel()
	}
	if time.Now().Before(lock.Until()) {
		c.h.counted(hd, n)
	}
}

// every runs fault, then waits gap, until deadline.
func every(deadline time.Time, gap time.Duration, fault func()) {
	for time.Now().Add(gap).Before(deadline) {
		time.Sleep(gap)
		fault()
	}
	time.Sleep(time.Until(deadline))
}

// Redis paused (SIGSTOP) for longer than the ttl, again and again: locks
// are lost, none twice at once, as no data is lost.
func TestCheckerPausedRedis(t *testing.T) {
	c, srv, _ := singleChecker(t)
	c.run(t, func(deadline time.Time) {
		every(deadline, 500*time.Millisecond, func() {
			srv.Pause()
			time.Sleep(checkTTL * 3 / 2)
			srv.Resume()
		})
	})
}

// As TestCheckerPausedRedis, with go-redis's default retries: the pauses
// outlast the read timeout, so go-redis sends acquires, refreshes and
// releases again, and every copy runs once Redis is back.
func TestCheckerPausedRedisDefaultRetries(t *testing.T) {
	c, srv, _ := singleChecker(t, faults.DefaultRetries)
	c.run(t, func(deadline time.Time) {
		every(deadline, 500*time.Millisecond, func() {
			srv.Pause()
			time.Sleep(checkTTL * 3 / 2)
			srv.Resume()
		})
	})
}

// A holder cut off behind its proxy (a blackhole) past its lock's ttl, as in
// TestCheckerPausedHolder, with go-redis's default retries: its commands
// are sent again on new connections once the network is back.
func TestCheckerPausedHolderDefaultRetries(t *testing.T) {
	c, _, proxies := singleChecker(t, faults.DefaultRetries)
	runPausedHolder(t, c, proxies)
}

// Redis restarted without persistence: holders may overlap after it, but
// fences still grow, so the resource refuses what it must.
func TestCheckerRestartedRedis(t *testing.T) {
	c, srv, _ := singleChecker(t)
	runRestartedRedis(t, c, srv)
}

// runRestartedRedis runs c while srv is restarted without persistence
// again and again, as TestCheckerRestartedRedis does.
func runRestartedRedis(t *testing.T, c *checker, srv *redistest.Server) verdict {
	t.Helper()
	return c.run(t, func(deadline time.Time) {
		every(deadline, 600*time.Millisecond, func() {
			c.h.lost(time.Now())
			srv.Restart()
		})
	})
}

// FLUSHALL while workers hold the lock and wait for it.
func TestCheckerFlushedRedis(t *testing.T) {
	c, srv, _ := singleChecker(t)
	admin := srv.Client()
	c.run(t, func(deadline time.Time) {
		every(deadline, 400*time.Millisecond, func() {
			c.h.lost(time.Now())
			if err := admin.FlushAll(context.Background()).Err(); err != nil {
				t.Errorf("FLUSHALL: %v", err)
			}
		})
	})
}

// A holder that pauses, as a whole process would (its connections swallow
// everything, so it renews nothing), past its lock's ttl, and writes once
// it is back: the fence must refuse that write, which a resource without
// fences would take.
func TestCheckerPausedHolder(t *testing.T) {
	c, _, proxies := singleChecker(t)
	runPausedHolder(t, c, proxies)
}

// runPausedHolder runs c with worker 0 pausing, behind its proxy, at the
// first write of one holding in two, as TestCheckerPausedHolder does.
func runPausedHolder(t *testing.T, c *checker, proxies []*faults.Proxy) verdict {
	t.Helper()
	var holdings int
	c.pause = func(worker int, hd *holding) bool {
		if worker != 0 || hd.firstTry != 0 { // pause at the first write of a holding
			return false
		}
		if holdings++; holdings%2 == 1 { // of one holding in two
			return false
		}
		return pauseHolder(&c.h, hd, proxies[0])
	}
	v := c.run(t, func(deadline time.Time) { time.Sleep(time.Until(deadline)) })
	if v.pausedRefused == 0 {
		t.Log("no holder paused while another wrote: the fence was not put to the test")
	}
	return v
}

// pauseHolder cuts hd's worker off behind its proxy p until another
// holding's write is accepted, or for at most three ttls, and reports
// whether one was.
func pauseHolder(h *history, hd *holding, p *faults.Proxy) bool {
	remove := p.Blackhole()
	defer remove()
	seq := h.now()
	for deadline := time.Now().Add(3 * checkTTL); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if h.acceptedSince(hd, seq) {
			return true
		}
	}
	return false
}

// A Redlock of five nodes, two of which are killed and started again,
// empty, more than a ttl later, as docs/safety.md advises for nodes without
// persistence: no lock they held is still alive when they are back, so no
// two holders may overlap. A holder whose quorum included them is left on a
// minority until its next refresh, which finds the lock lost; nobody else
// can get a quorum meanwhile.
func TestCheckerRedlockNodesRestarted(t *testing.T) {
	c, nodes := redlockChecker(t)
	c.run(t, func(deadline time.Time) {
		every(deadline, 300*time.Millisecond, func() {
			c.h.lostOnMinority(time.Now())
			nodes[0].Server.Kill()
			nodes[1].Server.Kill()
			time.Sleep(checkTTL + 100*time.Millisecond)
			nodes[0].Server.Start()
			nodes[1].Server.Start()
		})
	})
}

// A Redlock of five nodes, two of which answer sometimes within the node
// timeout and sometimes not, with no data lost: no two holders may overlap,
// and no holder may think it holds the lock on fewer than three nodes.
func TestCheckerRedlockSlowNodes(t *testing.T) {
	c, nodes := redlockChecker(t)
	c.run(t, func(deadline time.Time) {
		// Each way 0 to 120ms: a round trip from far under the node
		// timeout to far over it.
		slow := []func(){nodes[3].Proxy.Latency(60*time.Millisecond, 60*time.Millisecond), nodes[4].Proxy.Latency(60*time.Millisecond, 60*time.Millisecond)}
		time.Sleep(time.Until(deadline))
		for _, remove := range slow {
			remove()
		}
	})
}

// A Redlock of five healthy nodes, and workers that hand the lock over as
// fast as they can, each attempt with a new Client, whose first wait
// subscribes to the release messages and then tries again at once.
//
// It guards against a double grant: an Obtain whose first attempt found
// the lock held before every node answered must not retry with the same
// token, or a node's late grant of the first attempt counts for the retry
// and the first attempt's clean-up deletes it, leaving the holder on a
// minority with Err nil and Until ahead (and Fence 0). The checker reports
// that as a Redlock holder on fewer nodes than a quorum.
func TestCheckerRedlockContended(t *testing.T) {
	c, nodes := redlockChecker(t)
	c.gap = time.Millisecond
	c.fresh = func() (*dlock.Client, func()) {
		var clients []redis.UniversalClient
		for _, n := range nodes {
			o := &redis.Options{Addr: n.Proxy.Addr()}
			checkerOptions(o)
			clients = append(clients, redis.NewClient(o))
		}
		locker, err := dlock.NewRedlock(clients)
		if err != nil {
			panic(err) // five distinct clients: cannot happen
		}
		return locker, func() {
			locker.Close()
			for _, rdb := range clients {
				_ = rdb.Close()
			}
		}
	}
	c.run(t, func(deadline time.Time) { time.Sleep(time.Until(deadline)) })
}
