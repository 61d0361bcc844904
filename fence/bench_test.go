package fence_test

import (
	"context"
	"database/sql"
	"testing"

	"github.com/dlock-go/dlock/fence"
	"github.com/dlock-go/dlock/internal/testenv"
)

// BenchmarkGuard is one guarded write (the fence recorded, one UPDATE of
// the data, the commit) per iteration, with a fence that grows.
func BenchmarkGuard(b *testing.B) {
	for _, d := range []struct {
		name string
		open func(testing.TB) *sql.DB
		fence.Dialect
	}{
		{"sqlite", sqliteDB, fence.SQLite},
		{"postgres", func(t testing.TB) *sql.DB { return postgresDB(t, nil) }, fence.PostgreSQL},
	} {
		b.Run(d.name, func(b *testing.B) {
			s := newStore(b, d.open(b), d.Dialect)
			ctx := context.Background()
			update := s.q("UPDATE " + s.data + " SET value = ? WHERE resource = ?")
			f := int64(0)
			b.ReportAllocs()
			for b.Loop() {
				f++
				err := fence.Guard(ctx, s.db, "bench", f, func(tx *sql.Tx) error {
					_, err := tx.ExecContext(ctx, update, "v", "bench")
					return err
				}, fence.WithTable(s.fences))
				if err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkRedisSet is one fenced Set per iteration, on the shared
// redis-server.
func BenchmarkRedisSet(b *testing.B) {
	r := newRedis(b, sharedClient(b))
	ctx := context.Background()
	key := testenv.NewKey(b)
	f := int64(0)
	b.ReportAllocs()
	for b.Loop() {
		f++
		if err := r.Set(ctx, key, f, "value", 0); err != nil {
			b.Fatal(err)
		}
	}
}
