package dlock_test

import (
	"errors"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/dlock-go/dlock"
	"github.com/dlock-go/dlock/internal/door"
)

// DeploymentOf gives a sibling package the go-redis client of a plain
// Client, tells it a Redlock apart, and the error of a Client that cannot
// work.
func TestDeploymentOf(t *testing.T) {
	t.Parallel()
	e := setup(t)
	if d := door.DeploymentOf(e.locker); d.Redis != e.rdb || d.Redlock || d.Err != nil {
		t.Fatalf("plain Client: %+v, want its go-redis client", d)
	}
	a := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"})
	b := redis.NewClient(&redis.Options{Addr: "127.0.0.1:2"})
	t.Cleanup(func() { a.Close(); b.Close() })
	q, err := dlock.NewRedlock([]redis.UniversalClient{a, b, e.rdb})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { q.Close() })
	if d := door.DeploymentOf(q); d.Redis != nil || !d.Redlock || d.Err != nil {
		t.Fatalf("Redlock Client: %+v, want Redlock and no go-redis client", d)
	}
	nilRedis := dlock.New(nil)
	t.Cleanup(func() { nilRedis.Close() })
	if d := door.DeploymentOf(nilRedis); d.Redis != nil || !errors.Is(d.Err, dlock.ErrNilClient) {
		t.Fatalf("Client on a nil go-redis client: %+v, want ErrNilClient", d)
	}
	badOption := dlock.New(e.rdb, dlock.WithLogger(nil))
	t.Cleanup(func() { badOption.Close() })
	if d := door.DeploymentOf(badOption); d.Redis != nil || !errors.Is(d.Err, dlock.ErrInvalidOption) {
		t.Fatalf("Client with an invalid option: %+v, want ErrInvalidOption", d)
	}
	for _, c := range []any{(*dlock.Client)(nil), nil, e.rdb} {
		if d := door.DeploymentOf(c); d.Redis != nil || !errors.Is(d.Err, dlock.ErrInvalidOption) {
			t.Fatalf("DeploymentOf(%T): %+v, want ErrInvalidOption", c, d)
		}
	}
}
