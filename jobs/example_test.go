package jobs_test

import (
	"context"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/dlock-go/dlock"
	"github.com/dlock-go/dlock/jobs"
)

// Every host's cron runs this at 03:00; the report is made once.
func ExampleRunner_Run() {
	rdb := redis.NewClient(&redis.Options{Addr: redisAddr})
	defer rdb.Close()
	locker := dlock.New(rdb)
	defer locker.Close()
	runner := jobs.New(locker, jobs.WithAttempts(2)) // a failed night is retried by the next host

	slot := jobs.Slot(time.Date(2026, 11, 21, 3, 0, 4, 0, time.UTC), 24*time.Hour) // 4s late
	report := func(context.Context) error { return nil }
	for range 2 { // two hosts, one after the other
		outcome, err := runner.Run(context.Background(), "example:nightly-report", slot, report)
		fmt.Println(outcome, err)
	}
	// Output:
	// ran <nil>
	// already done <nil>
}

func ExampleSlot() {
	every := time.Hour
	early := time.Date(2026, 11, 21, 2, 59, 58, 0, time.UTC)
	late := time.Date(2026, 11, 21, 3, 0, 3, 0, time.UTC)
	fmt.Println(jobs.Slot(early, every), jobs.Slot(late, every))
	// Output:
	// 2026-11-21 03:00:00 +0000 UTC 2026-11-21 03:00:00 +0000 UTC
}

func ExampleRunner_History() {
	rdb := redis.NewClient(&redis.Options{Addr: redisAddr})
	defer rdb.Close()
	locker := dlock.New(rdb)
	defer locker.Close()
	ctx := context.Background()
	runner := jobs.New(locker, jobs.WithHost("host-1"))

	slot := time.Date(2026, 11, 21, 3, 0, 0, 0, time.UTC)
	runner.Run(ctx, "example:history", slot, func(context.Context) error {
		return fmt.Errorf("the database is down")
	})
	records, _ := runner.History(ctx, "example:history")
	for _, r := range records {
		fmt.Println(r.Slot.Format(time.DateTime), r.Attempt, r.Host, r.Status, r.Error)
	}
	// Output:
	// 2026-11-21 03:00:00 1 host-1 failed the database is down
}
