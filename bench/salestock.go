package bench

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/dlock-go/dlock/stock"
)

// stockSale sells with package stock, an Inventory per client.
type stockSale struct {
	invs   []*stock.Inventory
	commit bool
}

func newStockSale(commit bool) func([]*redis.Client, SaleConfig) saleApproach {
	return func(clients []*redis.Client, _ SaleConfig) saleApproach {
		s := &stockSale{commit: commit}
		for _, c := range clients {
			inv, err := stock.New(c, stock.WithRetention(time.Minute))
			if err != nil {
				panic(err) // a constant, valid option
			}
			s.invs = append(s.invs, inv)
		}
		return s
	}
}

func (s *stockSale) stock(ctx context.Context, key string, items int) error {
	return s.invs[0].Set(ctx, key, int64(items))
}

func (s *stockSale) buy(ctx context.Context, c int, key string, buyer int) (bool, int, error) {
	inv := s.invs[c]
	order := fmt.Sprint("buyer-", buyer)
	err := inv.Reserve(ctx, key, order, 1, 10*time.Minute)
	if errors.Is(err, stock.ErrSoldOut) {
		return false, 0, nil
	}
	if err == nil && s.commit {
		err = inv.Commit(ctx, key, order)
	}
	return err == nil, 0, err
}

func (s *stockSale) left(ctx context.Context, key string) (int, error) {
	n, err := s.invs[0].Available(ctx, key)
	return int(n), err
}

func (s *stockSale) close() error {
	var errs []error
	for _, inv := range s.invs {
		errs = append(errs, inv.Close())
	}
	return errors.Join(errs...)
}
