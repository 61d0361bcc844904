package election_test

import (
	"context"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/dlock-go/dlock"
	"github.com/dlock-go/dlock/election"
)

// Lead keeps the work running on one process at a time, and campaigns
// again after a loss.
func ExampleLead() {
	rdb := redis.NewClient(&redis.Options{Addr: redisAddr})
	defer rdb.Close()
	locker := dlock.New(rdb)
	defer locker.Close()

	e, err := election.New(locker, "example:scheduler")
	if err != nil {
		fmt.Println(err)
		return
	}
	err = election.Lead(context.Background(), e, "host-1", func(ctx context.Context) error {
		l, _ := election.FromContext(ctx)
		fmt.Println("leading, term > 0:", l.Term() > 0)
		return nil // the work is over: Lead resigns and returns
	})
	fmt.Println(err)
	// Output:
	// leading, term > 0: true
	// <nil>
}

func ExampleElection_Campaign() {
	rdb := redis.NewClient(&redis.Options{Addr: redisAddr})
	defer rdb.Close()
	locker := dlock.New(rdb)
	defer locker.Close()
	ctx := context.Background()

	e, err := election.New(locker, "example:campaign", election.WithTTL(5*time.Second))
	if err != nil {
		fmt.Println(err)
		return
	}
	leadership, err := e.Campaign(ctx, "10.0.0.7:8080")
	if err != nil {
		fmt.Println(err)
		return
	}
	leader, _ := e.Leader(ctx)
	fmt.Println("leader:", leader.Value, leader.Term == leadership.Term())

	select {
	case <-leadership.Done():
		fmt.Println("lost:", leadership.Err())
	default:
		fmt.Println("resign:", leadership.Resign(ctx))
	}
	_, err = e.Leader(ctx)
	fmt.Println(err)
	// Output:
	// leader: 10.0.0.7:8080 true
	// resign: <nil>
	// election: no leader in "example:campaign"
}

func ExampleElection_Observe() {
	rdb := redis.NewClient(&redis.Options{Addr: redisAddr})
	defer rdb.Close()
	locker := dlock.New(rdb)
	defer locker.Close()
	ctx, stop := context.WithCancel(context.Background())
	defer stop()

	e, err := election.New(locker, "example:observe")
	if err != nil {
		fmt.Println(err)
		return
	}
	leaders := e.Observe(ctx)
	fmt.Printf("%q\n", (<-leaders).Value) // nobody yet

	leadership, _ := e.Campaign(ctx, "primary")
	fmt.Printf("%q\n", (<-leaders).Value)
	leadership.Resign(ctx)
	fmt.Printf("%q\n", (<-leaders).Value)
	// Output:
	// ""
	// "primary"
	// ""
}
