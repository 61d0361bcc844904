package faults_test

import (
	"context"
	"errors"
	"os"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/dlock-go/dlock"
	"github.com/dlock-go/dlock/faults"
	"github.com/dlock-go/dlock/observe"
	"github.com/dlock-go/dlock/redistest"
)

// A stalled holder: one worker's connections freeze (its process lives on,
// as in a network stall) while it holds the lock, for three times its ttl,
// and three other workers, each with a Client of its own that reaches
// Redis directly, loop obtain, fenced write, release. The first of them
// must get the lock soon after it expires, whatever happened in the queue
// of waiters before: woken waiters beaten to the lock, handovers, the
// stalled worker's own waits. The stalled worker also takes part in the
// contention between stalls, through its proxy, half of the time with
// go-redis's default options (MaxRetries 3, ReadTimeout 5s) and half with
// no retries.
//
// TestStalledHolderExpiry makes stallRunsDefault stalls, and stallRunsSlow
// with DLOCK_SLOW_FAULTS=1 (as the other slow fault tests); the environment
// variable DLOCK_STALL_RUNS sets any number. Each takes about 1.5s.

const (
	stallTTL         = 400 * time.Millisecond
	stallFor         = 3 * stallTTL
	stallWaiters     = 3
	stallRunsDefault = 20
	stallRunsSlow    = 100
	stallKey         = "stalled"
	// stallWaitFor bounds a waiter's Obtain: far longer than a stall, so
	// that a deadline, after which a worker tries again at once, never
	// hides a waiter that sleeps through the expiry.
	stallWaitFor = 10 * stallTTL
)

// stallBound is how long after a lock's expiry its first waiter must have
// it: max(100ms, ttl/4).
func stallBound(ttl time.Duration) time.Duration { return max(100*time.Millisecond, ttl/4) }

// stallSlack is what the test allows beyond stallBound, for a machine busy
// with -race on two cores, where a waiter's timer can fire late and its
// round trip wait for the CPU: on such a machine, shared with other test
// runs, 20 stalls gave a median of 1ms and at most 6ms. A waiter that
// sleeps past the expiry until it renews its place in the queue, 2s after
// its last try, is 1.5s late or so: the slack cannot hide it.
const stallSlack = 400 * time.Millisecond

// stallRuns is the number of stalls to make: DLOCK_STALL_RUNS, else
// stallRunsSlow with DLOCK_SLOW_FAULTS=1, else stallRunsDefault.
func stallRuns(t *testing.T) int {
	v := os.Getenv("DLOCK_STALL_RUNS")
	if v == "" {
		if os.Getenv("DLOCK_SLOW_FAULTS") == "1" {
			return stallRunsSlow
		}
		return stallRunsDefault
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 {
		t.Fatalf("DLOCK_STALL_RUNS=%q: want a positive number", v)
	}
	return n
}

// grants are the fences of the locks the waiting workers got, in any order.
type grants struct {
	mu     sync.Mutex
	fences []int64
	added  chan struct{} // a value after each add (capacity 1)
}

func (g *grants) add(fence int64) {
	g.mu.Lock()
	g.fences = append(g.fences, fence)
	g.mu.Unlock()
	select {
	case g.added <- struct{}{}:
	default:
	}
}

// after returns the lowest fence above fence, and whether there is one.
func (g *grants) after(fence int64) (int64, bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	next, ok := int64(0), false
	for _, f := range g.fences {
		if f > fence && (!ok || f < next) {
			next, ok = f, true
		}
	}
	return next, ok
}

// fencedResource accepts a write whose fence is at least the highest it
// accepted, as a database that keeps the fence with the data does.
type fencedResource struct {
	mu      sync.Mutex
	highest int64
}

func (r *fencedResource) write(fence int64) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if fence < r.highest {
		return false
	}
	r.highest = fence
	return true
}

// A stall asks the stalling worker to freeze at its next holding: it
// blackholes its proxy, sends the lock on held, and waits for thaw.
type stall struct {
	held chan stalled
	thaw chan struct{}
}

// stalled is the lock a worker froze with, and whether a release handed it
// over (see observe.Event.Handoff).
type stalled struct {
	lock       *dlock.Lock
	handedOver bool
}

// lastObtain is an Observer that keeps whether its Client's last obtain
// was handed over; the Client obtains one lock at a time.
type lastObtain struct{ handoff atomic.Bool }

func (o *lastObtain) Observe(e observe.Event) {
	if e.Type == observe.EventObtain && e.Err == nil {
		o.handoff.Store(e.Handoff)
	}
}

func TestStalledHolderExpiry(t *testing.T) {
	runs := stallRuns(t)
	srv := redistest.NewServer(t)
	admin := srv.Client()
	p := faults.New(t, srv.Addr())
	defaults := func(o *redis.Options) { // go-redis's own: Proxy.Client sets others
		o.DialTimeout, o.ReadTimeout, o.WriteTimeout, o.MaxRetries = 0, 0, 0, 0
	}
	noRetries := func(o *redis.Options) { o.MaxRetries = -1 }
	var seen lastObtain
	stallers := []*dlock.Client{
		dlock.New(p.Client(defaults), dlock.WithObserver(&seen)),
		dlock.New(p.Client(noRetries), dlock.WithObserver(&seen)),
	}

	var res fencedResource
	g := grants{added: make(chan struct{}, 1)}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	defer func() {
		cancel()
		wg.Wait()
		for _, l := range stallers {
			l.Close()
		}
	}()
	for i := range stallWaiters {
		rdb := srv.Client() // go-redis's default options, straight to Redis
		locker := dlock.New(rdb)
		wg.Go(func() {
			defer locker.Close()
			stallWork(ctx, locker, &res, func(l *dlock.Lock) { g.add(l.Fence()) }, i)
		})
	}
	stalls := make(chan stall, 1)
	wg.Go(func() { stallingWork(ctx, stallers, &seen, p, &res, stalls) })

	var gaps []time.Duration
	handedOver := 0
	for run := 0; len(gaps) < runs; run++ {
		if run == 3*runs {
			t.Fatalf("only %d of %d stalls came about in %d tries", len(gaps), runs, run)
		}
		s := stall{held: make(chan stalled, 1), thaw: make(chan struct{})}
		stalls <- s
		var st stalled
		select {
		case st = <-s.held:
		case <-time.After(30 * time.Second):
			t.Fatal("the stalling worker got no lock in 30s")
		}
		stalledAt, lock := time.Now(), st.lock
		expiry, ok := expiryOf(t, admin, lock)
		if !ok {
			// It expired before it could be looked at (a busy machine):
			// the gap cannot be measured from it.
			close(s.thaw)
			continue
		}
		next := waitGrant(t, &g, lock.Fence())
		time.Sleep(time.Until(stalledAt.Add(stallFor)))
		close(s.thaw)
		if next < 0 {
			t.Fatalf("stall %d: no waiter got the lock within 10s of its expiry", len(gaps))
		}
		// The lowest fence above the stalled one: every waiter that got the
		// lock before this one's first report had reported its own.
		next, _ = g.after(lock.Fence())
		gap := time.Duration(next-expiry) * time.Microsecond
		gaps = append(gaps, gap)
		if st.handedOver {
			handedOver++
		}
		if gap < 0 {
			t.Errorf("stall %d: a waiter got the lock %v before the stalled holder's expiry", len(gaps), -gap)
		}
		time.Sleep(stallTTL / 4) // some contention before the next stall
	}
	slices.Sort(gaps)
	t.Logf("first waiter's lock after the stalled holder's expiry, %d stalls (%d of locks handed over): median %v, max %v (bound %v, slack %v)",
		len(gaps), handedOver, gaps[len(gaps)/2], gaps[len(gaps)-1], stallBound(stallTTL), stallSlack)
	over, overBound := 0, 0
	for _, gap := range gaps {
		if gap > stallBound(stallTTL) {
			overBound++
		}
		if gap > stallBound(stallTTL)+stallSlack {
			over++
		}
	}
	t.Logf("%d of %d stalls over the bound of %v itself", overBound, len(gaps), stallBound(stallTTL))
	if over > 0 {
		t.Errorf("%d of %d stalls: the first waiter got the lock more than %v after the expiry (longest %v)",
			over, len(gaps), stallBound(stallTTL)+stallSlack, gaps[len(gaps)-1])
	}
}

// expiryOf returns when lock expires, in microseconds of the server's clock
// (the unit of fences), and false if it is not held any more. It is the
// key's PEXPIRETIME, the time Redis keeps it until, which a fence taken
// after it cannot precede.
func expiryOf(t *testing.T, admin *redis.Client, lock *dlock.Lock) (int64, bool) {
	t.Helper()
	v, err := admin.Eval(context.Background(),
		"return {redis.call('PEXPIRETIME', KEYS[1]), redis.call('GET', KEYS[1])}",
		[]string{stallKey}).Slice()
	if err != nil {
		t.Fatal(err)
	}
	if value, _ := v[1].(string); tokenOf(value) != lock.Token() {
		return 0, false
	}
	ms := v[0].(int64)
	if ms < 0 {
		t.Fatalf("the stalled lock has PEXPIRETIME %d", ms)
	}
	return ms * 1000, true
}

// waitGrant waits until a waiter reports a lock with a fence above fence,
// for at most 10s, and returns it, or -1.
func waitGrant(t *testing.T, g *grants, fence int64) int64 {
	t.Helper()
	deadline := time.After(10 * time.Second)
	for {
		if next, ok := g.after(fence); ok {
			return next
		}
		select {
		case <-g.added:
		case <-deadline:
			return -1
		}
	}
}

// stallWork takes the lock again and again until ctx ends, with Obtain and
// auto-renew when n is even, with Do when it is odd, and writes to res
// twice while it holds it; got is told of each lock first.
func stallWork(ctx context.Context, locker *dlock.Client, res *fencedResource, got func(*dlock.Lock), worker int) {
	for n := worker; ctx.Err() == nil; n++ {
		octx, cancel := context.WithTimeout(ctx, stallWaitFor)
		var err error
		if n%2 == 0 {
			var lock *dlock.Lock
			lock, err = locker.Obtain(octx, stallKey, stallTTL, dlock.WithAutoRenew(true))
			if err == nil {
				got(lock)
				stallHold(lock, res)
				_ = lock.Release(context.WithoutCancel(octx))
			}
		} else {
			err = locker.Do(octx, stallKey, stallTTL, func(ctx context.Context) error {
				lock, _ := dlock.LockFromContext(ctx)
				got(lock)
				stallHold(lock, res)
				return nil
			})
		}
		cancel()
		if err != nil && ctx.Err() == nil && !errors.Is(err, dlock.ErrNotObtained) {
			time.Sleep(10 * time.Millisecond) // Redis is unreachable: do not spin
		}
	}
}

// stallHold writes to res twice, 10ms apart, while lock is valid.
func stallHold(lock *dlock.Lock, res *fencedResource) {
	for range 2 {
		if lock.Err() != nil || !time.Now().Before(lock.Until()) {
			return
		}
		res.write(lock.Fence())
		time.Sleep(10 * time.Millisecond)
	}
}

// stallingWork is the worker whose connections go through p: it takes the
// lock as the others do, with each of lockers in turn and without
// auto-renew, and when a stall is asked for, freezes with the next lock it
// gets.
func stallingWork(ctx context.Context, lockers []*dlock.Client, seen *lastObtain, p *faults.Proxy, res *fencedResource, stalls <-chan stall) {
	for n := 0; ctx.Err() == nil; n++ {
		octx, cancel := context.WithTimeout(ctx, stallWaitFor)
		lock, err := lockers[n%len(lockers)].Obtain(octx, stallKey, stallTTL)
		cancel()
		if err != nil {
			if ctx.Err() == nil && !errors.Is(err, dlock.ErrNotObtained) {
				time.Sleep(10 * time.Millisecond)
			}
			continue
		}
		lock.Fence() // asked for as the work starts, before any stall
		select {
		case s := <-stalls:
			remove := p.Blackhole()
			s.held <- stalled{lock, seen.handoff.Load()}
			select {
			case <-s.thaw:
			case <-ctx.Done():
			}
			remove() // closes its connections: it finds the lock gone below
		default:
		}
		stallHold(lock, res)
		rctx, rcancel := context.WithTimeout(ctx, stallTTL)
		_ = lock.Release(rctx)
		rcancel()
	}
}
