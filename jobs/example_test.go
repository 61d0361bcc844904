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
	runner, err := jobs.New(locker, jobs.WithAttempts(2)) // a failed night is retried by the next host
	if err != nil {
		fmt.Println(err)
		return
	}

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

// An hourly job's runs belong to the period they were fired in: by hand at
// 21:33 or late at 21:59, the slot of 21:00, so that the run of 22:00 is
// not taken ahead of time; a moment before 22:00, by a clock a little
// fast, the slot of 22:00.
func ExampleSlot() {
	every := time.Hour
	for _, fired := range []string{"21:00:00", "21:00:03", "21:33:00", "21:59:00", "21:59:59.8", "22:00:00"} {
		t, _ := time.Parse("2006-01-02 15:04:05", "2026-11-21 "+fired)
		fmt.Println(fired, "->", jobs.Slot(t, every).Format(time.TimeOnly))
	}
	fmt.Println(jobs.Slot(time.Now(), 0).IsZero()) // no period: the zero time, which Run refuses
	// Output:
	// 21:00:00 -> 21:00:00
	// 21:00:03 -> 21:00:00
	// 21:33:00 -> 21:00:00
	// 21:59:00 -> 21:00:00
	// 21:59:59.8 -> 22:00:00
	// 22:00:00 -> 22:00:00
	// true
}

func ExampleRunner_History() {
	rdb := redis.NewClient(&redis.Options{Addr: redisAddr})
	defer rdb.Close()
	locker := dlock.New(rdb)
	defer locker.Close()
	ctx := context.Background()
	runner, err := jobs.New(locker, jobs.WithHost("host-1"))
	if err != nil {
		fmt.Println(err)
		return
	}

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
