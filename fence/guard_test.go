package fence_test

import (
	"context"
	"database/sql"
	"errors"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dlock-go/dlock/fence"
	"github.com/dlock-go/dlock/internal/testenv"
	"github.com/dlock-go/dlock/internal/testenv/pgtest"
)

// A higher fence passes, an equal one passes, a lower one is refused
// without running the function, with the recorded fence in its error.
func TestGuardOrder(t *testing.T) {
	dialects(t, func(t *testing.T, s *store) {
		ctx := testenv.Timeout(t, time.Minute)
		steps := []struct {
			fence int64
			value string
			stale bool
		}{
			{5, "five", false},
			{5, "five again", false}, // the same holder writes again
			{7, "seven", false},
			{6, "six", true}, // a holder before 7's
			{1, "one", true},
			{7, "seven again", false},
			{1 << 62, "huge", false},
		}
		for _, st := range steps {
			ran, err := s.write(ctx, "account:1", st.fence, st.value)
			if st.stale {
				var se *fence.StaleError
				if !errors.Is(err, fence.ErrStale) || !errors.As(err, &se) {
					t.Fatalf("write with fence %d = %v; want ErrStale", st.fence, err)
				}
				if se.Fence != st.fence || se.Recorded != 7 || se.Resource != "account:1" {
					t.Errorf("StaleError %+v; want fence %d, recorded 7, resource account:1", se, st.fence)
				}
				if ran {
					t.Errorf("fence %d: the function ran", st.fence)
				}
				continue
			}
			if err != nil || !ran {
				t.Fatalf("write with fence %d = %v (ran %t); want it written", st.fence, err, ran)
			}
			if got := s.value(t, "account:1"); got != st.value {
				t.Errorf("after fence %d: value %q, want %q", st.fence, got, st.value)
			}
		}
		if got := s.recorded(t, "account:1"); got != 1<<62 {
			t.Errorf("recorded fence %d, want %d", got, int64(1<<62))
		}
		// Resources are apart: a low fence passes for another one.
		if _, err := s.write(ctx, "account:2", 1, "other"); err != nil {
			t.Errorf("fence 1 for another resource: %v", err)
		}
	})
}

// fn's error rolls back its writes and the fence: a lower fence passes
// after it.
func TestGuardRollsBack(t *testing.T) {
	dialects(t, func(t *testing.T, s *store) {
		ctx := testenv.Timeout(t, time.Minute)
		if _, err := s.write(ctx, "r", 3, "three"); err != nil {
			t.Fatal(err)
		}
		boom := errors.New("boom")
		err := fence.Guard(ctx, s.db, "r", 9, func(tx *sql.Tx) error {
			if err := s.put(ctx, tx, "r", 9, "nine"); err != nil {
				return err
			}
			return boom
		}, fence.WithTable(s.fences))
		if !errors.Is(err, boom) || err.Error() != boom.Error() {
			t.Fatalf("Guard = %v; want fn's error as is", err)
		}
		if got := s.recorded(t, "r"); got != 3 {
			t.Errorf("recorded fence %d after the roll-back, want 3", got)
		}
		if got := s.value(t, "r"); got != "three" {
			t.Errorf("value %q after the roll-back, want three", got)
		}
		if _, err := s.write(ctx, "r", 4, "four"); err != nil {
			t.Errorf("fence 4 after 9 rolled back: %v", err)
		}
		// A panic rolls back too, and goes on.
		func() {
			defer func() {
				if recover() == nil {
					t.Error("the panic did not go on")
				}
			}()
			_ = fence.Guard(ctx, s.db, "r", 11, func(*sql.Tx) error { panic("fn") }, fence.WithTable(s.fences))
		}()
		if got := s.recorded(t, "r"); got != 4 {
			t.Errorf("recorded fence %d after a panic, want 4", got)
		}
	})
}

// Many writers of one resource at once, with fences in random order: the
// highest fence's value stands, the committed writes' fences never go
// down, and every refusal names a higher fence.
func TestGuardConcurrentWriters(t *testing.T) {
	dialects(t, func(t *testing.T, s *store) {
		ctx := testenv.Timeout(t, 2*time.Minute)
		const writers = 24
		fences := rand.Perm(writers)
		var wg sync.WaitGroup
		var mu sync.Mutex
		var accepted, refused int
		for _, f := range fences {
			f := int64(f + 1)
			wg.Go(func() {
				err := fence.Guard(ctx, s.db, "hot", f, func(tx *sql.Tx) error {
					if err := s.put(ctx, tx, "hot", f, "v"+time.Duration(f).String()); err != nil {
						return err
					}
					time.Sleep(time.Millisecond) // hold the row a while
					return nil
				}, fence.WithTable(s.fences))
				mu.Lock()
				defer mu.Unlock()
				var se *fence.StaleError
				switch {
				case err == nil:
					accepted++
				case errors.As(err, &se) && se.Recorded > f:
					refused++
				default:
					t.Errorf("fence %d: %v", f, err)
				}
			})
		}
		wg.Wait()
		logged := s.logged(t, "hot")
		if !slices.IsSorted(logged) {
			t.Errorf("committed fences out of order (a stale write committed): %v", logged)
		}
		if len(logged) != accepted || accepted+refused != writers {
			t.Errorf("%d logged, %d accepted, %d refused, of %d", len(logged), accepted, refused, writers)
		}
		if got := s.value(t, "hot"); got != "v"+time.Duration(writers).String() {
			t.Errorf("value %q, want the highest fence's", got)
		}
		t.Logf("%d accepted, %d refused", accepted, refused)
	})
}

// A context cancelled before Guard: nothing runs. Cancelled inside fn,
// which then returns nil: nothing is committed, the fence included.
func TestGuardContextCancelled(t *testing.T) {
	dialects(t, func(t *testing.T, s *store) {
		ctx := testenv.Timeout(t, time.Minute)
		if _, err := s.write(ctx, "c", 5, "five"); err != nil {
			t.Fatal(err)
		}
		done, cancel := context.WithCancel(ctx)
		cancel()
		ran, err := s.write(done, "c", 6, "six")
		if !errors.Is(err, context.Canceled) || ran {
			t.Errorf("Guard with a cancelled context = %v (ran %t); want context.Canceled, fn not run", err, ran)
		}
		mid, cancel := context.WithCancel(ctx)
		err = fence.Guard(mid, s.db, "c", 9, func(tx *sql.Tx) error {
			if err := s.put(mid, tx, "c", 9, "nine"); err != nil {
				return err
			}
			cancel()
			return nil
		}, fence.WithTable(s.fences))
		if !errors.Is(err, context.Canceled) {
			t.Errorf("Guard cancelled in fn = %v; want context.Canceled", err)
		}
		if got, v := s.recorded(t, "c"), s.value(t, "c"); got != 5 || v != "five" {
			t.Errorf("after the cancelled Guard: fence %d, value %q; want 5, five", got, v)
		}
		if _, err := s.write(ctx, "c", 6, "six"); err != nil {
			t.Errorf("fence 6 after 9 was cancelled: %v", err)
		}
	})
}

// Bad input gets an error, never a panic, and runs nothing.
func TestGuardBadInput(t *testing.T) {
	db := sqliteDB(t)
	ctx := testenv.Timeout(t, time.Minute)
	if err := fence.CreateTable(ctx, db); err != nil {
		t.Fatal(err)
	}
	fn := func(*sql.Tx) error {
		t.Error("fn ran")
		return nil
	}
	cases := []struct {
		name     string
		db       *sql.DB
		resource string
		fence    int64
		fn       func(*sql.Tx) error
		opts     []fence.Option
		want     string
	}{
		{"nil db", nil, "r", 1, fn, nil, "nil *sql.DB"},
		{"empty resource", db, "", 1, fn, nil, "empty resource"},
		{"negative fence", db, "r", -3, fn, nil, "want a positive fence"},
		{"nil fn", db, "r", 1, nil, nil, "nil function"},
		{"table with a space", db, "r", 1, fn, []fence.Option{fence.WithTable("a b")}, "table name"},
		{"table with a quote", db, "r", 1, fn, []fence.Option{fence.WithTable("x'; DROP TABLE y; --")}, "table name"},
		{"empty table", db, "r", 1, fn, []fence.Option{fence.WithTable("")}, "table name"},
		{"table of three parts", db, "r", 1, fn, []fence.Option{fence.WithTable("a.b.c")}, "table name"},
		{"table starting with a digit", db, "r", 1, fn, []fence.Option{fence.WithTable("1t")}, "table name"},
		{"long table", db, "r", 1, fn, []fence.Option{fence.WithTable(strings.Repeat("t", 64))}, "table name"},
		{"unknown dialect", db, "r", 1, fn, []fence.Option{fence.WithDialect("oracle")}, "unknown dialect"},
		{"missing table", db, "r", 1, fn, []fence.Option{fence.WithTable("nowhere")}, "nowhere"},
		{"long resource on MySQL", db, strings.Repeat("r", 256), 1, fn, []fence.Option{fence.WithDialect(fence.MySQL)}, "at most 255"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := fence.Guard(ctx, c.db, c.resource, c.fence, c.fn, c.opts...)
			if err == nil || !strings.Contains(err.Error(), c.want) || !strings.HasPrefix(err.Error(), "fence: ") {
				t.Errorf("Guard = %v; want an error about %q", err, c.want)
			}
			if errors.Is(err, fence.ErrStale) {
				t.Errorf("Guard = %v; want no ErrStale", err)
			}
		})
	}
	// Fence 0, what Lock.Fence returns to a holder that lost its lock
	// before it asked for one: refused as stale, fn not run.
	var se *fence.StaleError
	if err := fence.Guard(ctx, db, "r", 0, fn); !errors.Is(err, fence.ErrStale) || !errors.As(err, &se) || se.Fence != 0 || se.Resource != "r" ||
		!strings.Contains(err.Error(), "lost before it asked") {
		t.Errorf("Guard with fence 0 = %v; want a StaleError of fence 0", err)
	}
	if err := fence.CreateTable(ctx, nil); err == nil {
		t.Error("CreateTable(nil) = nil")
	}
	if err := fence.CreateTable(ctx, db, fence.WithTable("bad name")); err == nil {
		t.Error("CreateTable with a bad table name = nil")
	}
}

// CreateTable is idempotent, takes a schema-qualified name, and Guard
// works with both dialects named or detected.
func TestCreateTable(t *testing.T) {
	dialects(t, func(t *testing.T, s *store) {
		ctx := testenv.Timeout(t, time.Minute)
		for range 2 {
			if err := fence.CreateTable(ctx, s.db, fence.WithTable(s.fences)); err != nil {
				t.Fatal(err)
			}
		}
		schema := "public"
		if s.dialect == fence.SQLite {
			schema = "main"
		}
		qualified := fence.WithTable(schema + "." + s.fences + "_q")
		if err := fence.CreateTable(ctx, s.db, qualified, fence.WithDialect(s.dialect)); err != nil {
			t.Fatal(err)
		}
		noop := func(*sql.Tx) error { return nil }
		if err := fence.Guard(ctx, s.db, "q", 2, noop, qualified, fence.WithDialect(s.dialect)); err != nil {
			t.Fatal(err)
		}
		if err := fence.Guard(ctx, s.db, "q", 1, noop, qualified); !errors.Is(err, fence.ErrStale) {
			t.Errorf("Guard = %v; want ErrStale", err)
		}
	})
}

// A PostgreSQL server stopped between two calls: Guard returns its error
// (no ErrStale, no panic), and works again once the server is back.
func TestGuardPostgresRestarted(t *testing.T) {
	srv := pgtest.New(t)
	s := newStore(t, postgresDB(t, srv), fence.PostgreSQL)
	ctx := testenv.Timeout(t, time.Minute)
	if _, err := s.write(ctx, "p", 1, "one"); err != nil {
		t.Fatal(err)
	}
	srv.Stop()
	ran, err := s.write(ctx, "p", 2, "two")
	if err == nil || ran || errors.Is(err, fence.ErrStale) || !strings.HasPrefix(err.Error(), "fence: ") {
		t.Fatalf("Guard with the server down = %v (ran %t); want the database's error", err, ran)
	}
	t.Logf("with the server down: %v", err)
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	// The pool's connections died with the server: database/sql drops
	// them and dials again.
	if _, err := s.write(ctx, "p", 2, "two"); err != nil {
		t.Fatalf("Guard once the server is back = %v", err)
	}
	if _, err := s.write(ctx, "p", 1, "one"); !errors.Is(err, fence.ErrStale) {
		t.Errorf("fence 1 after 2 = %v; want ErrStale", err)
	}
}

// A writer that comes while a higher fence's transaction is open waits for
// it, then is refused; an equal fence waits, then passes.
func TestGuardWaitsForOpenWriter(t *testing.T) {
	dialects(t, func(t *testing.T, s *store) {
		ctx := testenv.Timeout(t, time.Minute)
		inside, release := make(chan struct{}), make(chan struct{})
		first := make(chan error, 1)
		go func() {
			first <- fence.Guard(ctx, s.db, "w", 10, func(tx *sql.Tx) error {
				if err := s.put(ctx, tx, "w", 10, "ten"); err != nil {
					return err
				}
				close(inside)
				<-release
				return nil
			}, fence.WithTable(s.fences))
		}()
		<-inside
		type outcome struct {
			ran bool
			err error
		}
		lower, equal := make(chan outcome, 1), make(chan outcome, 1)
		go func() {
			ran, err := s.write(ctx, "w", 9, "nine")
			lower <- outcome{ran, err}
		}()
		go func() {
			ran, err := s.write(ctx, "w", 10, "ten again")
			equal <- outcome{ran, err}
		}()
		select {
		case o := <-lower:
			t.Fatalf("fence 9 returned while 10's transaction was open: %v", o.err)
		case o := <-equal:
			t.Fatalf("fence 10 returned while another 10's transaction was open: %v", o.err)
		case <-time.After(100 * time.Millisecond): // they wait, as they must
		}
		close(release)
		if err := <-first; err != nil {
			t.Fatal(err)
		}
		if o := <-lower; !errors.Is(o.err, fence.ErrStale) || o.ran {
			t.Errorf("fence 9 = %v (ran %t); want ErrStale, fn not run", o.err, o.ran)
		}
		if o := <-equal; o.err != nil || !o.ran {
			t.Errorf("equal fence 10 = %v (ran %t); want it written", o.err, o.ran)
		}
		if got := s.value(t, "w"); got != "ten again" {
			t.Errorf("value %q, want ten again", got)
		}
	})
}

// Under REPEATABLE READ, PostgreSQL refuses a writer that waited for a
// concurrent one with a serialization error, which Guard returns: no
// ErrStale, nothing written. The next attempt compares fences as usual.
func TestGuardPostgresRepeatableRead(t *testing.T) {
	srv := postgres.Server(t)
	db, err := sql.Open("pgx", srv.DSN()+" default_transaction_isolation='repeatable read'")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	s := newStore(t, db, fence.PostgreSQL)
	ctx := testenv.Timeout(t, time.Minute)
	inside, release := make(chan struct{}), make(chan struct{})
	first := make(chan error, 1)
	go func() {
		first <- fence.Guard(ctx, db, "rr", 5, func(*sql.Tx) error {
			close(inside)
			<-release
			return nil
		}, fence.WithTable(s.fences))
	}()
	<-inside
	second := make(chan error, 1)
	ran := false
	go func() {
		second <- fence.Guard(ctx, db, "rr", 6, func(*sql.Tx) error { ran = true; return nil }, fence.WithTable(s.fences))
	}()
	admin := postgresDB(t, srv)
	testenv.Eventually(t, 30*time.Second, "fence 6 waiting for 5's row lock", func() bool {
		var n int
		err := admin.QueryRowContext(ctx, "SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock'").Scan(&n)
		return err == nil && n > 0
	})
	close(release)
	if err := <-first; err != nil {
		t.Fatal(err)
	}
	err = <-second
	if err == nil || ran || errors.Is(err, fence.ErrStale) || !strings.Contains(err.Error(), "40001") {
		t.Errorf("Guard that waited, under REPEATABLE READ = %v (ran %t); want a serialization error (40001)", err, ran)
	}
	if _, err := s.write(ctx, "rr", 6, "six"); err != nil {
		t.Errorf("fence 6 again: %v", err)
	}
}
