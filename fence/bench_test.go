package fence_test

import (
	"context"
	"database/sql"
	"strconv"
	"testing"

	"github.com/dlock-go/dlock/fence"
	"github.com/dlock-go/dlock/internal/testenv"
)

// BenchmarkGuard is one guarded write per iteration (the fence recorded,
// one UPDATE of the data, the commit), with a fence that grows, beside the
// same transaction without the fence (plain), in one run.
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
			if _, err := s.db.ExecContext(ctx, s.q("INSERT INTO "+s.data+" (resource, value) VALUES (?, ?)"), "bench", "v"); err != nil {
				b.Fatal(err)
			}
			update := s.q("UPDATE " + s.data + " SET value = ? WHERE resource = ?")
			n := 0
			write := func(tx *sql.Tx) error {
				n++ // a new value each time: each commit writes
				_, err := tx.ExecContext(ctx, update, strconv.Itoa(n), "bench")
				return err
			}
			f := int64(0) // grows across the runs of the sub-benchmark
			b.Run("guard", func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					f++
					if err := fence.Guard(ctx, s.db, "bench", f, write, fence.WithTable(s.fences)); err != nil {
						b.Fatal(err)
					}
				}
			})
			b.Run("plain", func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					tx, err := s.db.BeginTx(ctx, nil)
					if err != nil {
						b.Fatal(err)
					}
					if err := write(tx); err != nil {
						b.Fatal(err)
					}
					if err := tx.Commit(); err != nil {
						b.Fatal(err)
					}
				}
			})
		})
	}
}

// BenchmarkRedisSet is one fenced Set per iteration on the shared
// redis-server, beside a plain SET (plain), in one run.
func BenchmarkRedisSet(b *testing.B) {
	rdb := sharedClient(b)
	r := newRedis(b, rdb)
	ctx := context.Background()
	key := testenv.NewKey(b)
	f := int64(0) // grows across the runs of the sub-benchmark
	b.Run("fenced", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			f++
			if err := r.Set(ctx, key, f, "value", 0); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("plain", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if err := rdb.Set(ctx, key+":plain", "value", 0).Err(); err != nil {
				b.Fatal(err)
			}
		}
	})
}
