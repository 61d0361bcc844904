package dlockgocron_test

import (
	"fmt"
	"time"

	"github.com/go-co-op/gocron/v2"
	"github.com/redis/go-redis/v9"

	"github.com/dlock-go/dlock"
	"github.com/dlock-go/dlock/election"
	dlockgocron "github.com/dlock-go/dlock/gocron"
	"github.com/dlock-go/dlock/jobs"
)

// Every host runs this scheduler; each hourly report is made once.
func ExampleNewLocker() {
	rdb := redis.NewClient(&redis.Options{Addr: redisAddr})
	defer rdb.Close()
	client := dlock.New(rdb)
	defer client.Close()

	runner, err := jobs.New(client)
	if err != nil {
		fmt.Println(err)
		return
	}
	locker, err := dlockgocron.NewLocker(runner, time.Hour)
	if err != nil {
		fmt.Println(err)
		return
	}
	s, err := gocron.NewScheduler(gocron.WithDistributedLocker(locker))
	if err != nil {
		fmt.Println(err)
		return
	}
	_, err = s.NewJob(gocron.CronJob("0 * * * *", false), gocron.NewTask(func() { /* the report */ }),
		gocron.WithName("hourly-report"))
	fmt.Println(err)
	s.Start()
	s.Shutdown()
	// Output: <nil>
}

// Every host runs this scheduler; the elected one runs the jobs.
func ExampleNewElector() {
	rdb := redis.NewClient(&redis.Options{Addr: redisAddr})
	defer rdb.Close()
	client := dlock.New(rdb)
	defer client.Close()

	seat, err := election.New(client, "example:scheduler")
	if err != nil {
		fmt.Println(err)
		return
	}
	elector := dlockgocron.NewElector(seat, "host-1")
	defer elector.Close() // resigns: another host's scheduler takes over at once
	s, err := gocron.NewScheduler(gocron.WithDistributedElector(elector))
	if err != nil {
		fmt.Println(err)
		return
	}
	_, err = s.NewJob(gocron.DurationJob(time.Minute), gocron.NewTask(func() { /* the work */ }))
	fmt.Println(err)
	s.Start()
	s.Shutdown()
	// Output: <nil>
}
