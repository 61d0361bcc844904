// Package lockenv is the part of dlock's test environment that needs the
// root package: a dlock Client closed with the test. It is apart from
// testenv, so that the tests inside package dlock, which cannot import
// what imports dlock, can use testenv.
package lockenv

import (
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/dlock-go/dlock"
	"github.com/dlock-go/dlock/internal/testenv"
)

// Locker returns a dlock Client on rdb, or on a client of the shared
// redis-server (testenv.Client) if rdb is nil, closed when the test ends,
// before that client is: one Client per simulated process.
func Locker(t testing.TB, rdb redis.UniversalClient, opts ...dlock.Option) *dlock.Client {
	t.Helper()
	if rdb == nil {
		rdb = testenv.Client(t)
	}
	locker := dlock.New(rdb, opts...)
	t.Cleanup(func() { locker.Close() })
	return locker
}
