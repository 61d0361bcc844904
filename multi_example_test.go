package dlock_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/dlock-go/dlock"
)

// Move money between two accounts under both of their locks: two transfers
// that name the accounts in opposite orders never deadlock.
func ExampleClient_ObtainMulti() {
	rdb := redis.NewClient(&redis.Options{Addr: redisAddr})
	defer rdb.Close()
	locker := dlock.New(rdb)
	defer locker.Close()

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	lock, err := locker.ObtainMulti(ctx, []string{"account:7", "account:3"}, time.Minute)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer lock.Release(context.Background())

	// Both accounts are held; a resource that checks the fence of either
	// account refuses its earlier holders.
	info, _ := locker.Inspect(ctx, "account:7")
	fmt.Println("account:7 held by this lock:", info.Fingerprint == lock.Fingerprint(), "fence:", info.Fence == lock.Fence())
	fmt.Println("named by:", lock.Key())
	// Output:
	// account:7 held by this lock: true fence: true
	// named by: account:3
}

// TryObtainMulti takes all of the keys or none: with one of them held by
// another, nothing is taken.
func ExampleClient_TryObtainMulti() {
	rdb := redis.NewClient(&redis.Options{Addr: redisAddr})
	defer rdb.Close()
	locker := dlock.New(rdb)
	defer locker.Close()
	ctx := context.Background()

	other, _ := locker.TryObtain(ctx, "doc:b", time.Minute)
	defer other.Release(ctx)

	_, err := locker.TryObtainMulti(ctx, []string{"doc:a", "doc:b"}, time.Minute)
	fmt.Println("not obtained:", errors.Is(err, dlock.ErrNotObtained))
	info, _ := locker.Inspect(ctx, "doc:a")
	fmt.Println("doc:a held:", info.Held)
	// Output:
	// not obtained: true
	// doc:a held: false
}
