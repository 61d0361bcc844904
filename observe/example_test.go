package observe_test

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/dlock-go/dlock"
	"github.com/dlock-go/dlock/jobs"
	"github.com/dlock-go/dlock/observe"
)

// outcomes counts what the packages tell, by package, op and outcome; it
// ignores the locks' own events.
type outcomes struct {
	mu     sync.Mutex
	counts map[string]int
}

func (o *outcomes) Observe(observe.Event) {}

func (o *outcomes) ObservePackage(e observe.PackageEvent) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.counts[e.Package+" "+e.Op+" "+e.Outcome]++
}

// A PackageObserver installed on a Client with dlock.WithObserver hears
// from the packages built on that Client: here, how a job's runs ended.
func ExamplePackageObserver() {
	counted := &outcomes{counts: map[string]int{}}
	rdb := redis.NewClient(&redis.Options{Addr: "localhost:6379"})
	defer rdb.Close()
	locker := dlock.New(rdb, dlock.WithObserver(counted))
	defer locker.Close()
	runner, err := jobs.New(locker)
	if err != nil {
		fmt.Println(err)
		return
	}
	slot := jobs.Slot(time.Now(), time.Hour)
	for range 2 {
		_, _ = runner.Run(context.Background(), "report", slot, func(context.Context) error { return nil })
	}
	counted.mu.Lock()
	defer counted.mu.Unlock()
	fmt.Println(counted.counts) // map[jobs run already_done:1 jobs run ran:1]
}
