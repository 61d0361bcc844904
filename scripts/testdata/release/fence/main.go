// Command fence takes a dlock lock and writes with its fence to Redis
// through fence.NewRedis, then shows a lower fence refused, as a consumer
// of the fence module does.
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
	"github.com/dlock-go/dlock/fence"
)

func main() {
	if len(os.Args) != 2 {
		log.Fatal("usage: fence REDIS_ADDR")
	}
	if err := write(os.Args[1]); err != nil {
		log.Fatal(err)
	}
}

func write(addr string) error {
	ctx := context.Background()
	rdb := redis.NewClient(&redis.Options{Addr: addr})
	defer rdb.Close()
	client := dlock.New(rdb)
	defer client.Close()
	lock, err := client.Obtain(ctx, "release-check:fence", time.Minute)
	if err != nil {
		return err
	}
	defer lock.Release(ctx)
	store, err := fence.NewRedis(rdb)
	if err != nil {
		return err
	}
	if err := store.Set(ctx, "release-check:report", lock.Fence(), "written by the holder", time.Minute); err != nil {
		return fmt.Errorf("a write with the holder's fence: %w", err)
	}
	err = store.Set(ctx, "release-check:report", lock.Fence()-1, "a late holder's write", time.Minute)
	if !errors.Is(err, fence.ErrStale) {
		return fmt.Errorf("a write with a lower fence: %v, want fence.ErrStale", err)
	}
	fmt.Println("written with fence", lock.Fence(), "and a lower fence refused")
	return nil
}
