// Command root runs the README's quick start as a consumer of the root module
// alone: obtain a lock, find it taken, release it, find it free.
package main

import (
	"context"
	"errors"
	"fmt"
	"log"
	"os"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/dlock-go/dlock"
)

func main() {
	if len(os.Args) != 2 {
		log.Fatal("usage: root REDIS_ADDR")
	}
	rdb := redis.NewClient(&redis.Options{Addr: os.Args[1]})
	defer rdb.Close()
	if err := quickStart(context.Background(), rdb); err != nil {
		log.Fatal(err)
	}
}

func quickStart(ctx context.Context, rdb *redis.Client) error {
	locker := dlock.New(rdb) // one per process: safe for concurrent use
	defer locker.Close()

	lock, err := locker.Obtain(ctx, "invoice:1001", 30*time.Second) // waits while another holder has it
	if err != nil {
		return err // errors.Is(err, dlock.ErrNotObtained) when ctx ended first
	}
	fmt.Printf("obtained invoice:1001, fence %d\n", lock.Fence())
	if _, err := locker.TryObtain(ctx, "invoice:1001", time.Second); !errors.Is(err, dlock.ErrNotObtained) {
		return fmt.Errorf("a second TryObtain of a held lock returned %v, want dlock.ErrNotObtained", err)
	}
	if err := lock.Release(context.WithoutCancel(ctx)); err != nil {
		return fmt.Errorf("release: %w", err)
	}
	again, err := locker.TryObtain(ctx, "invoice:1001", time.Second)
	if err != nil {
		return fmt.Errorf("TryObtain after the release: %w", err)
	}
	if again.Fence() <= lock.Fence() {
		return fmt.Errorf("the next holder's fence %d is not above %d", again.Fence(), lock.Fence())
	}
	fmt.Println("released, then obtained again with a larger fence")
	return again.Release(ctx)
}
