package dlock_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/dlock-go/dlock"
	"github.com/dlock-go/dlock/redistest"
)

// nightlyReport runs the report on one instance only, when cron starts it
// on every instance at 02:00: whoever takes the lock runs it; the others
// skip it. (The README shows this function.)
func nightlyReport(ctx context.Context, locker *dlock.Client) error {
	err := locker.Do(ctx, "job:nightly-report", time.Minute, runReport,
		dlock.WithoutWait(),               // one attempt: the others skip the run
		dlock.WithMinHold(10*time.Minute)) // kept after a quick run, for a host whose clock is late
	if errors.Is(err, dlock.ErrNotObtained) {
		return nil // another instance runs the report
	}
	return err // the report's error, or Redis's (naming the key and the node)
}

// runReport does the work, while the lock is held and renewed; ctx is
// cancelled if the lock is lost.
func runReport(_ context.Context) error {
	fmt.Println("running the report")
	return nil
}

// Run a nightly job on one instance only.
func Example() {
	rdb := redis.NewClient(&redis.Options{Addr: redisAddr})
	defer rdb.Close()

	locker := dlock.New(rdb) // one per process: safe for concurrent use
	defer locker.Close()

	ctx := context.Background()
	if err := nightlyReport(ctx, locker); err != nil {
		fmt.Println(err)
	}
	info, _ := locker.Inspect(ctx, "job:nightly-report")
	fmt.Println("still held after the report:", info.Held)
	_, _ = locker.ForceRelease(ctx, "job:nightly-report") // only so that this example can run again
	// Output:
	// running the report
	// still held after the report: true
}

// Obtain waits while another holder has the lock, until its context ends.
func ExampleClient_Obtain() {
	rdb := redis.NewClient(&redis.Options{Addr: redisAddr})
	defer rdb.Close()
	locker := dlock.New(rdb)
	defer locker.Close()

	holder, _ := locker.TryObtain(context.Background(), "invoice:1001", time.Minute)
	time.AfterFunc(20*time.Millisecond, func() { holder.Release(context.Background()) })

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	lock, err := locker.Obtain(ctx, "invoice:1001", time.Minute)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer lock.Release(context.Background())
	fmt.Println("obtained after the holder released it; fence grew:", lock.Fence() > holder.Fence())
	// Output: obtained after the holder released it; fence grew: true
}

// When the context ends while someone else holds the lock, the error says
// both: not obtained, and why Obtain stopped waiting.
func ExampleClient_Obtain_timeout() {
	rdb := redis.NewClient(&redis.Options{Addr: redisAddr})
	defer rdb.Close()
	locker := dlock.New(rdb)
	defer locker.Close()

	holder, _ := locker.TryObtain(context.Background(), "report:weekly", time.Minute)
	defer holder.Release(context.Background())

	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	_, err := locker.Obtain(ctx, "report:weekly", time.Minute)
	fmt.Println(errors.Is(err, dlock.ErrNotObtained), errors.Is(err, context.DeadlineExceeded))
	// Output: true true
}

// A holder that outlived its lock cannot release the next holder's lock.
func ExampleLock_Release() {
	rdb := redis.NewClient(&redis.Options{Addr: redisAddr})
	defer rdb.Close()
	locker := dlock.New(rdb)
	defer locker.Close()
	ctx := context.Background()

	slow, _ := locker.TryObtain(ctx, "cart:42", 20*time.Millisecond)
	time.Sleep(50 * time.Millisecond) // a pause longer than the ttl
	next, _ := locker.TryObtain(ctx, "cart:42", time.Minute)

	err := slow.Release(ctx)
	fmt.Println(errors.Is(err, dlock.ErrNotHeld))
	fmt.Println(next.Release(ctx))
	// Output:
	// true
	// <nil>
}

// Keep a lock for a job that takes longer than planned.
func ExampleLock_Refresh() {
	rdb := redis.NewClient(&redis.Options{Addr: redisAddr})
	defer rdb.Close()
	locker := dlock.New(rdb)
	defer locker.Close()
	ctx := context.Background()

	lock, _ := locker.TryObtain(ctx, "import:catalog", 10*time.Second)
	defer lock.Release(ctx)

	if err := lock.Refresh(ctx, time.Minute); err != nil {
		fmt.Println("lost the lock, stop the import:", err)
		return
	}
	ttl, _ := lock.TTL(ctx)
	fmt.Println(ttl > 50*time.Second)
	// Output: true
}

// Pass the fence to the resource you protect, so it can refuse a write from
// a holder whose lock expired while it was paused.
func ExampleLock_Fence() {
	rdb := redis.NewClient(&redis.Options{Addr: redisAddr})
	defer rdb.Close()
	locker := dlock.New(rdb)
	defer locker.Close()
	ctx := context.Background()

	// The protected resource keeps the highest fence it has seen and
	// refuses writes carrying a lower one; here, a Redis script.
	write := redis.NewScript(`
		local seen = tonumber(redis.call('HGET', KEYS[1], 'fence') or '0')
		if tonumber(ARGV[1]) <= seen then return 0 end
		redis.call('HSET', KEYS[1], 'fence', ARGV[1], 'value', ARGV[2])
		return 1`)

	first, _ := locker.TryObtain(ctx, "doc:7", 20*time.Millisecond)
	firstFence := first.Fence()       // asked for as the work starts
	time.Sleep(50 * time.Millisecond) // first is paused past its ttl
	second, _ := locker.TryObtain(ctx, "doc:7", time.Minute)
	defer second.Release(ctx)

	ok2, _ := write.Run(ctx, rdb, []string{"doc:7:data"}, second.Fence(), "from second").Int()
	ok1, _ := write.Run(ctx, rdb, []string{"doc:7:data"}, firstFence, "from first").Int()
	fmt.Println("second written:", ok2 == 1, "late first refused:", ok1 == 0)
	// Output: second written: true late first refused: true
}

// Do holds a lock while a function runs, renews it, and releases it. The
// function's context is cancelled if the lock is lost.
func ExampleClient_Do() {
	rdb := redis.NewClient(&redis.Options{Addr: redisAddr})
	defer rdb.Close()
	locker := dlock.New(rdb)
	defer locker.Close()

	err := locker.Do(context.Background(), "cache:refill:products", 10*time.Second, func(ctx context.Context) error {
		// A long refill: the lock is renewed while it runs, and ctx ends
		// (with cause dlock.ErrLockLost) if the lock is lost.
		fmt.Println("refilling the cache")
		return ctx.Err()
	})
	fmt.Println("done:", err)
	// Output:
	// refilling the cache
	// done: <nil>
}

// A lock obtained WithAutoRenew stays held until it is released; Done
// closes if it is lost, and Err says why.
func ExampleWithAutoRenew() {
	rdb := redis.NewClient(&redis.Options{Addr: redisAddr})
	defer rdb.Close()
	locker := dlock.New(rdb)
	defer locker.Close()

	lock, err := locker.Obtain(context.Background(), "leader:billing", 3*time.Second, dlock.WithAutoRenew(true))
	if err != nil {
		fmt.Println(err)
		return
	}
	rdb.Del(context.Background(), "leader:billing") // someone deletes the key
	select {
	case <-lock.Done():
		fmt.Println("lost:", errors.Is(lock.Err(), dlock.ErrLockLost))
	case <-time.After(5 * time.Second):
		fmt.Println("still held")
	}
	// Output: lost: true
}

// Fair waiters get the lock in the order they asked for it.
func ExampleWithFair() {
	rdb := redis.NewClient(&redis.Options{Addr: redisAddr})
	defer rdb.Close()
	locker := dlock.New(rdb)
	defer locker.Close()

	holder, _ := locker.TryObtain(context.Background(), "printer", time.Minute)
	done := make(chan string)
	for i, name := range []string{"first", "second", "third"} {
		go func() {
			lock, err := locker.Obtain(context.Background(), "printer", time.Minute, dlock.WithFair())
			if err != nil {
				done <- err.Error()
				return
			}
			done <- name
			lock.Release(context.Background())
		}()
		// Let this one queue before the next one asks.
		for info, _ := locker.Inspect(context.Background(), "printer"); info.Waiters <= i; {
			time.Sleep(time.Millisecond)
			info, _ = locker.Inspect(context.Background(), "printer")
		}
	}
	holder.Release(context.Background())
	for range 3 {
		fmt.Println(<-done)
	}
	// Output:
	// first
	// second
	// third
}

// refillCache rebuilds the product cache on one instance at a time, however
// long it takes. (docs/locks.md shows this function.)
func refillCache(ctx context.Context, locker *dlock.Client) error {
	return locker.Do(ctx, "cache:products", 10*time.Second, func(ctx context.Context) error {
		lock, _ := dlock.LockFromContext(ctx)
		return rebuildCache(ctx, lock.Fence()) // ctx ends, cause dlock.ErrLockLost, if the lock is lost
	})
}

func rebuildCache(ctx context.Context, fence int64) error {
	fmt.Println("rebuilding the cache with fence > 0:", fence > 0)
	return ctx.Err()
}

// Do renews the lock while the function runs and cancels its context if
// the lock is lost.
func ExampleLockFromContext() {
	rdb := redis.NewClient(&redis.Options{Addr: redisAddr})
	defer rdb.Close()
	locker := dlock.New(rdb)
	defer locker.Close()

	if err := refillCache(context.Background(), locker); err != nil {
		fmt.Println(err)
	}
	// Output: rebuilding the cache with fence > 0: true
}

// A Redlock keeps each lock on a majority of independent Redis servers.
func ExampleNewRedlock() {
	var addrs []string
	for range 3 {
		srv, stop, err := redistest.Start()
		if err != nil {
			fmt.Println(err)
			return
		}
		defer stop()
		addrs = append(addrs, srv.Addr())
	}
	node1 := redis.NewClient(&redis.Options{Addr: addrs[0]})
	node2 := redis.NewClient(&redis.Options{Addr: addrs[1]})
	node3 := redis.NewClient(&redis.Options{Addr: addrs[2]})
	defer node1.Close()
	defer node2.Close()
	defer node3.Close()

	locker, err := dlock.NewRedlock([]redis.UniversalClient{node1, node2, node3})
	if err != nil {
		return // no nodes, a nil one, or the same one twice
	}
	defer locker.Close()

	lock, err := locker.Obtain(context.Background(), "job:nightly-report", time.Minute)
	if err != nil {
		fmt.Println(err) // a *dlock.QuorumError says how the nodes voted
		return
	}
	fmt.Println("held on a quorum, fence > 0:", lock.Fence() > 0)
	lock.Release(context.Background())
	// Output: held on a quorum, fence > 0: true
}
