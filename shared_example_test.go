package dlock_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/dlock-go/dlock"
)

// A semaphore of 3 permits: a fourth export waits (here it gives up at
// once with TryAcquire) until one of the three releases its permit.
func ExampleSemaphore() {
	rdb := redis.NewClient(&redis.Options{Addr: redisAddr})
	defer rdb.Close()
	locker := dlock.New(rdb)
	defer locker.Close()
	ctx := context.Background()

	exports := locker.Semaphore("exports", 3)
	var permits []*dlock.Lock
	for range 3 {
		permit, err := exports.Acquire(ctx, time.Minute)
		if err != nil {
			fmt.Println(err)
			return
		}
		permits = append(permits, permit)
	}
	_, err := exports.TryAcquire(ctx, time.Minute)
	fmt.Println("a 4th export:", errors.Is(err, dlock.ErrNotObtained))

	info, _ := locker.Inspect(ctx, "exports")
	fmt.Println(info.Kind, len(info.Holders), "of", info.Limit)
	for _, p := range permits {
		_ = p.Release(ctx)
	}
	// Output:
	// a 4th export: true
	// semaphore 3 of 3
}

// Readers share an RW lock; a writer has it alone.
func ExampleRWMutex() {
	rdb := redis.NewClient(&redis.Options{Addr: redisAddr})
	defer rdb.Close()
	locker := dlock.New(rdb)
	defer locker.Close()
	ctx := context.Background()

	prices := locker.RWMutex("prices")
	r1, _ := prices.RLock(ctx, time.Minute)
	r2, _ := prices.RLock(ctx, time.Minute)
	_, err := prices.TryLock(ctx, time.Minute)
	fmt.Println("a writer while two read:", errors.Is(err, dlock.ErrNotObtained))
	_ = r1.Release(ctx)
	_ = r2.Release(ctx)

	err = prices.Do(ctx, time.Minute, func(context.Context) error {
		fmt.Println("writing, alone")
		return nil
	})
	fmt.Println("done:", err)
	// Output:
	// a writer while two read: true
	// writing, alone
	// done: <nil>
}

// exportAll runs the semaphore code of docs/locks.md: every report is exported,
// at most three at a time across every instance.
func exportAll(ctx context.Context, locker *dlock.Client, reports []string, export func(context.Context, string) error) error {
	for _, report := range reports {
		exports := locker.Semaphore("exports", 3) // at most 3 at once, across every instance
		err := exports.Do(ctx, time.Minute, func(ctx context.Context) error {
			return export(ctx, report) // the permit is renewed while it runs
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// readPrice and setPrice run the RW lock code of docs/locks.md.
func readPrice(ctx context.Context, locker *dlock.Client, read func(context.Context) error) error {
	prices := locker.RWMutex("prices")
	hold, err := prices.RLock(ctx, 10*time.Second) // many readers at once
	if err != nil {
		return err
	}
	defer hold.Release(context.WithoutCancel(ctx))
	return read(ctx)
}

func setPrice(ctx context.Context, locker *dlock.Client, write func(context.Context) error) error {
	prices := locker.RWMutex("prices")
	return prices.Do(ctx, 10*time.Second, write) // alone; new readers wait behind it
}
