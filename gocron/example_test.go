package dlockgocron_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/go-co-op/gocron/v2"
	"github.com/redis/go-redis/v9"

	"github.com/dlock-go/dlock"
	"github.com/dlock-go/dlock/election"
	dlockgocron "github.com/dlock-go/dlock/gocron"
	"github.com/dlock-go/dlock/internal/testenv"
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

// docLocker and docElector are the code of the package's doc (doc.go), as
// written, so that it compiles; TestDocCodeIsTested checks that they agree.
func docLocker(dlockClient *dlock.Client) error {
	runner, err := jobs.New(dlockClient)
	if err != nil {
		return err
	}
	locker, err := dlockgocron.NewLocker(runner, time.Minute)
	if err != nil {
		return err
	}
	s, err := gocron.NewScheduler(gocron.WithDistributedLocker(locker))
	if err != nil {
		return err
	}
	return s.Shutdown()
}

func docElector(dlockClient *dlock.Client, hostname string) error {
	seat, err := election.New(dlockClient, "scheduler")
	if err != nil {
		return err
	}
	elector := dlockgocron.NewElector(seat, hostname)
	defer elector.Close()
	s, err := gocron.NewScheduler(gocron.WithDistributedElector(elector))
	if err != nil {
		return err
	}
	return s.Shutdown()
}

func TestDocCodeIsTested(t *testing.T) {
	_, _ = docLocker, docElector
	testenv.DocCodeIsTested(t, 2)
}
