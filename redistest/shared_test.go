package redistest_test

import (
	"context"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/dlock-go/dlock/redistest"
)

// runFunc is a stand-in for *testing.M.
type runFunc func() int

func (f runFunc) Run() int { return f() }

// Shared starts a server for the tests it runs, tells its address, and
// stops it after them.
func TestShared(t *testing.T) {
	var addr string
	code := redistest.Shared(runFunc(func() int {
		rdb := redis.NewClient(&redis.Options{Addr: addr})
		defer rdb.Close()
		if err := rdb.Ping(context.Background()).Err(); err != nil {
			t.Errorf("the shared server at %q: %v", addr, err)
		}
		return 7
	}), &addr).Run()
	if code != 7 {
		t.Errorf("Run = %d, want the tests' 7", code)
	}
	rdb := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1, DialerRetries: 1})
	defer rdb.Close()
	if err := rdb.Ping(context.Background()).Err(); err == nil {
		t.Errorf("the shared server at %q still answers after Run", addr)
	}
}
