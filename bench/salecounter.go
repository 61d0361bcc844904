package bench

import (
	"context"
	"errors"
	"time"

	"github.com/dlock-go/dlock"
	"github.com/redis/go-redis/v9"
)

// counterSale keeps the stock as a string counter, as the usual approaches
// to a sale do.
type counterSale struct{ clients []*redis.Client }

func (s counterSale) stock(ctx context.Context, key string, items int) error {
	return s.clients[0].Set(ctx, key, items, time.Hour).Err()
}

func (s counterSale) left(ctx context.Context, key string) (int, error) {
	n, err := s.clients[0].Get(ctx, key).Int()
	if err == nil {
		err = s.clients[0].Del(ctx, key).Err()
	}
	return max(n, 0), err
}

func (s counterSale) close() error { return nil }

// naiveSale reads, then writes: two buyers read the same stock and both buy.
type naiveSale struct{ counterSale }

func newNaiveSale(clients []*redis.Client, _ SaleConfig) saleApproach {
	return naiveSale{counterSale{clients}}
}

func (s naiveSale) buy(ctx context.Context, c int, key string, _ int) (bool, int, error) {
	rdb := s.clients[c]
	n, err := rdb.Get(ctx, key).Int()
	if err != nil || n <= 0 {
		return false, 0, err
	}
	return true, 0, rdb.Set(ctx, key, n-1, time.Hour).Err()
}

// lockedSale does the same under a dlock lock, a dlock Client per client.
type lockedSale struct {
	counterSale
	lockers []*dlock.Client
}

func newLockedSale(clients []*redis.Client, _ SaleConfig) saleApproach {
	s := &lockedSale{counterSale: counterSale{clients}}
	for _, c := range clients {
		s.lockers = append(s.lockers, dlock.New(c))
	}
	return s
}

func (s *lockedSale) buy(ctx context.Context, c int, key string, _ int) (bool, int, error) {
	lock, err := s.lockers[c].Obtain(ctx, key+":lock", 5*time.Second)
	if err != nil {
		return false, 0, err
	}
	rdb := s.clients[c]
	n, err := rdb.Get(ctx, key).Int()
	bought := err == nil && n > 0
	if bought {
		err = rdb.Set(ctx, key, n-1, time.Hour).Err()
	}
	return bought, 0, errors.Join(err, lock.Release(ctx))
}

func (s *lockedSale) close() error {
	var errs []error
	for _, l := range s.lockers {
		errs = append(errs, l.Close())
	}
	return errors.Join(errs...)
}

// watchSale is optimistic: WATCH the key, read it, write it in MULTI/EXEC,
// and start again if another buyer wrote it in between.
type watchSale struct {
	counterSale
	maxRetries int
}

func newWatchSale(clients []*redis.Client, cfg SaleConfig) saleApproach {
	return watchSale{counterSale{clients}, cfg.MaxRetries}
}

func (s watchSale) buy(ctx context.Context, c int, key string, _ int) (bool, int, error) {
	for retries := 0; retries <= s.maxRetries; retries++ {
		bought := false
		err := s.clients[c].Watch(ctx, func(tx *redis.Tx) error {
			n, err := tx.Get(ctx, key).Int()
			if err != nil || n <= 0 {
				return err
			}
			_, err = tx.TxPipelined(ctx, func(p redis.Pipeliner) error {
				return p.Set(ctx, key, n-1, time.Hour).Err()
			})
			bought = err == nil
			return err
		}, key)
		if !errors.Is(err, redis.TxFailedErr) {
			return bought, retries, err
		}
	}
	return false, s.maxRetries, errGaveUp
}

// decrSale decrements first and gives back what it should not have taken.
type decrSale struct{ counterSale }

func newDecrSale(clients []*redis.Client, _ SaleConfig) saleApproach {
	return decrSale{counterSale{clients}}
}

func (s decrSale) buy(ctx context.Context, c int, key string, _ int) (bool, int, error) {
	rdb := s.clients[c]
	n, err := rdb.Decr(ctx, key).Result()
	if err != nil || n >= 0 {
		return err == nil, 0, err
	}
	return false, 1, rdb.Incr(ctx, key).Err() // the compensation
}
