// Command gocron builds gocron v2's distributed locker on dlock's jobs
// runner and runs a job through it once, as a consumer of the gocron module
// does.
package main

import (
	"context"
	"fmt"
	"log"
	"os"
	"time"

	"github.com/go-co-op/gocron/v2"
	"github.com/redis/go-redis/v9"

	"github.com/dlock-go/dlock"
	dlockgocron "github.com/dlock-go/dlock/gocron"
	"github.com/dlock-go/dlock/jobs"
)

func main() {
	if len(os.Args) != 2 {
		log.Fatal("usage: gocron REDIS_ADDR")
	}
	if err := schedule(os.Args[1]); err != nil {
		log.Fatal(err)
	}
}

func schedule(addr string) error {
	rdb := redis.NewClient(&redis.Options{Addr: addr})
	defer rdb.Close()
	client := dlock.New(rdb)
	defer client.Close()
	runner, err := jobs.New(client)
	if err != nil {
		return err
	}
	locker, err := dlockgocron.NewLocker(runner, time.Hour)
	if err != nil {
		return err
	}
	lock, err := locker.Lock(context.Background(), "release-check:gocron")
	if err != nil {
		return fmt.Errorf("the locker's Lock: %w", err)
	}
	if err := lock.Unlock(context.Background()); err != nil {
		return fmt.Errorf("the lock's Unlock: %w", err)
	}
	s, err := gocron.NewScheduler(gocron.WithDistributedLocker(locker))
	if err != nil {
		return err
	}
	if _, err := s.NewJob(gocron.CronJob("0 * * * *", false), gocron.NewTask(func() {}),
		gocron.WithName("hourly-report")); err != nil {
		return err
	}
	s.Start()
	if err := s.Shutdown(); err != nil {
		return err
	}
	fmt.Println("gocron scheduler with dlock's distributed locker: took and released release-check:gocron")
	return nil
}
