package main

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/dlock-go/dlock"
	"github.com/redis/go-redis/v9"
)

// The double-clicked pay button (seed 003): every click is a request to some
// instance of the service, and only one of them may charge the customer.
const (
	payClicks   = 5
	payLockTTL  = 10 * time.Second      // longer than any payment takes
	payProvider = 50 * time.Millisecond // the payment provider's answer time
)

// A click ends in one of these ways.
type click int

const (
	clickCharged     click = iota // won the lock and charged
	clickDuplicate                // lost the lock: rejected as a duplicate
	clickAlreadyPaid              // won the lock after the charge: nothing to do
)

func doubleClickPay(ctx context.Context, d *demo) result {
	const order = 1001
	lockKey := d.key("pay:order:%d", order)
	statusKey := d.key("order:%d:status", order)
	chargesKey := d.key("order:%d:charges", order)
	defer d.cleanup(ctx, statusKey, chargesKey)

	clicks := make([]click, payClicks)
	errs := make([]error, payClicks)
	start := make(chan struct{}) // the clicks arrive together
	var wg sync.WaitGroup
	for i := range clicks {
		wg.Go(func() {
			<-start
			clicks[i], errs[i] = d.pay(ctx, lockKey, statusKey, chargesKey)
		})
	}
	close(start)
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return failed(err)
	}
	charges, err := d.getInt(ctx, chargesKey)
	if err != nil {
		return failed(err)
	}

	var count [3]int
	for _, c := range clicks {
		count[c]++
	}
	happened := fmt.Sprintf("%d clicks: %d charged, %d rejected as duplicates", payClicks, count[clickCharged], count[clickDuplicate])
	if n := count[clickAlreadyPaid]; n > 0 {
		happened += fmt.Sprintf(", %d found it paid", n)
	}
	var problems []string
	if charges != 1 {
		problems = append(problems, fmt.Sprintf("the customer was charged %d times", charges))
	}
	return verdict(happened, "one charge", problems)
}

// pay is one click: charge the order unless another click is doing it or
// has done it.
func (d *demo) pay(ctx context.Context, lockKey, statusKey, chargesKey string) (click, error) {
	lock, err := d.locker.TryObtain(ctx, lockKey, payLockTTL)
	if errors.Is(err, dlock.ErrNotObtained) {
		return clickDuplicate, nil
	}
	if err != nil {
		return 0, err
	}
	outcome, err := d.charge(ctx, statusKey, chargesKey)
	if rerr := lock.Release(ctx); err == nil {
		err = rerr
	}
	return outcome, err
}

// charge charges the order if it is not paid yet. The caller holds the lock.
func (d *demo) charge(ctx context.Context, statusKey, chargesKey string) (click, error) {
	status, err := d.rdb.Get(ctx, statusKey).Result()
	switch {
	case err == nil && status == "paid":
		return clickAlreadyPaid, nil
	case err != nil && !errors.Is(err, redis.Nil):
		return 0, err
	}
	if err := sleep(ctx, payProvider); err != nil {
		return 0, err
	}
	if err := d.rdb.Incr(ctx, chargesKey).Err(); err != nil {
		return 0, err
	}
	return clickCharged, d.rdb.Set(ctx, statusKey, "paid", 0).Err()
}
