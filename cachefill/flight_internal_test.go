package cachefill

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"
)

// testGroup returns a group whose goroutines the returned WaitGroup counts,
// and whose fetches call the load function of the Get that started them.
func testGroup(life context.Context) (*group, *sync.WaitGroup) {
	var wg sync.WaitGroup
	return newGroup(life, func(work func()) bool { wg.Go(work); return true }, callLoad), &wg
}

func callLoad(ctx context.Context, _ string, a getArgs) ([]byte, error) { return a.load(ctx) }

// with is the arguments of a Get whose fetch calls fetch.
func with(fetch func(ctx context.Context) ([]byte, error)) getArgs { return getArgs{load: fetch} }

// Concurrent calls for a key share one fetch; a caller whose context ends
// leaves it without stopping it for the others.
func TestGroupSharesOneFetch(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g, wg := testGroup(t.Context())
		var fetches atomic.Int32
		fetch := func(ctx context.Context) ([]byte, error) {
			fetches.Add(1)
			select {
			case <-time.After(time.Second):
				return []byte("v"), nil
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		}
		impatient, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
		defer cancel()
		var callers sync.WaitGroup
		for i := range 5 {
			callers.Go(func() {
				ctx := context.Background()
				if i == 0 {
					ctx = impatient
				}
				v, err := g.do(ctx, "k", with(fetch))
				switch {
				case i == 0 && !errors.Is(err, context.DeadlineExceeded):
					t.Errorf("impatient caller: %q, %v; want its deadline", v, err)
				case i > 0 && (err != nil || string(v) != "v"):
					t.Errorf("caller %d: %q, %v", i, v, err)
				}
			})
		}
		callers.Wait()
		wg.Wait()
		if n := fetches.Load(); n != 1 {
			t.Errorf("%d fetches for 5 concurrent callers, want 1", n)
		}
	})
}

// Callers of one context leave together when it ends, with its cause,
// while the fetch goes on for callers of other contexts. They joined in
// the order A, A, B, A, A, and one of a context that never ends: the first
// A and B watch their contexts, and so does the third A, since B came
// between; the second and the fourth A wait for a watcher in a set of
// waiters each.
func TestGroupCallersOfOneContext(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g, wg := testGroup(t.Context())
		release := make(chan struct{})
		fetch := func(ctx context.Context) ([]byte, error) {
			select {
			case <-release:
				return []byte("v"), nil
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		}
		a, cancelA := context.WithCancelCause(context.Background())
		b, cancelB := context.WithCancel(context.Background())
		defer cancelB()
		type result struct {
			ctx context.Context
			v   []byte
			err error
		}
		results := make(chan result, 6)
		var callers sync.WaitGroup
		for _, ctx := range []context.Context{a, a, b, a, a, context.Background()} {
			callers.Go(func() {
				v, err := g.do(ctx, "k", with(fetch))
				results <- result{ctx, v, err}
			})
			synctest.Wait() // joined
		}
		g.mu.Lock()
		f := g.flights["k"]
		n, sets := f.callers, len(f.sets)
		g.mu.Unlock()
		if n != 6 || sets != 2 {
			t.Fatalf("6 callers: %d counted, %d sets of waiters; want 6 and 2", n, sets)
		}
		why := errors.New("the client went away")
		cancelA(why)
		for range 4 {
			if r := <-results; r.ctx != a || !errors.Is(r.err, why) {
				t.Errorf("when A ended: %q, %v; want a caller of A, with its cause", r.v, r.err)
			}
		}
		synctest.Wait()
		if len(results) != 0 {
			t.Fatalf("%d callers of other contexts returned before the fetch ended", len(results))
		}
		close(release)
		for range 2 {
			if r := <-results; r.err != nil || string(r.v) != "v" {
				t.Errorf("a caller of another context: %q, %v; want the fetch's value", r.v, r.err)
			}
		}
		callers.Wait()
		wg.Wait()
	})
}

// Callers that share a context get the fetch's result when it ends first,
// and its end later changes nothing.
func TestGroupSharedContextOutlivesFetch(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g, wg := testGroup(t.Context())
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		release := make(chan struct{})
		var callers sync.WaitGroup
		for range 3 {
			callers.Go(func() {
				v, err := g.do(ctx, "k", with(func(context.Context) ([]byte, error) {
					<-release
					return []byte("v"), nil
				}))
				if err != nil || string(v) != "v" {
					t.Errorf("do = %q, %v; want the fetch's value", v, err)
				}
			})
		}
		synctest.Wait()
		close(release)
		callers.Wait()
		cancel() // after the fetch: changes nothing
		synctest.Wait()
		wg.Wait()
		g.mu.Lock()
		defer g.mu.Unlock()
		if len(g.flights) != 0 {
			t.Errorf("%d flights left after the fetch", len(g.flights))
		}
	})
}

// A caller whose context has ended already leaves at once with its cause,
// and the fetch it started is cancelled.
func TestGroupEndedContext(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g, wg := testGroup(t.Context())
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		cancelled := make(chan struct{})
		_, err := g.do(ctx, "k", with(func(ctx context.Context) ([]byte, error) {
			<-ctx.Done()
			close(cancelled)
			return nil, ctx.Err()
		}))
		if !errors.Is(err, context.Canceled) {
			t.Errorf("do with an ended context = %v, want context.Canceled", err)
		}
		<-cancelled
		wg.Wait()
	})
}

// A fetch whose callers all gave up is cancelled, and the next call starts
// a new one: callers of one context, which leave together.
func TestGroupCancelsAbandonedFetch(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g, wg := testGroup(t.Context())
		cancelled := make(chan struct{})
		fetch := func(ctx context.Context) ([]byte, error) {
			<-ctx.Done()
			close(cancelled)
			return nil, ctx.Err()
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		var callers sync.WaitGroup
		for range 3 {
			callers.Go(func() {
				if _, err := g.do(ctx, "k", with(fetch)); !errors.Is(err, context.DeadlineExceeded) {
					t.Errorf("do = %v, want the deadline", err)
				}
			})
		}
		callers.Wait()
		<-cancelled
		v, err := g.do(context.Background(), "k", with(func(context.Context) ([]byte, error) { return []byte("new"), nil }))
		if err != nil || string(v) != "new" {
			t.Errorf("do after an abandoned fetch = %q, %v; want a fetch of its own", v, err)
		}
		wg.Wait()
	})
}

// The end of the group's life cancels its fetches; a group whose owner is
// closed starts none.
func TestGroupLife(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		life, end := context.WithCancel(context.Background())
		g, wg := testGroup(life)
		done := make(chan error, 1)
		go func() {
			_, err := g.do(context.Background(), "k", with(func(ctx context.Context) ([]byte, error) {
				<-ctx.Done()
				return nil, ErrClosed
			}))
			done <- err
		}()
		synctest.Wait()
		end()
		if err := <-done; !errors.Is(err, ErrClosed) {
			t.Errorf("do when the life ends = %v, want the fetch's ErrClosed", err)
		}
		wg.Wait()
		closed := newGroup(context.Background(), func(func()) bool { return false }, callLoad)
		if _, err := closed.do(context.Background(), "k", getArgs{}); !errors.Is(err, ErrClosed) {
			t.Errorf("do on a closed group = %v, want ErrClosed", err)
		}
	})
}

// parseEntry takes every reply shape of read.lua, and refuses others.
func TestParseEntry(t *testing.T) {
	tests := []struct {
		reply []any
		want  entry
		err   bool
	}{
		{[]any{int64(0), "0", int64(0), "0-0"}, entry{code: readMiss, gen: "0", lastFill: "0-0"}, false},
		{[]any{int64(0), "3", int64(1), "17-2"}, entry{code: readMiss, gen: "3", claimed: true, lastFill: "17-2"}, false},
		{[]any{int64(0), "0", int64(0)}, entry{}, true},
		{[]any{int64(0)}, entry{}, true},
		{[]any{int64(1), "v", "12", "tok", "2", "1", int64(500)},
			entry{code: readValue, value: []byte("v"), delta: 12 * time.Millisecond, filler: "tok", gen: "2", stale: true, ttl: 500 * time.Millisecond}, false},
		{[]any{int64(2), "", "1", "tok", "0", "0", int64(-1)},
			entry{code: readNotFound, value: []byte{}, delta: time.Millisecond, filler: "tok", gen: "0", ttl: -time.Millisecond}, false},
		{[]any{int64(3)}, entry{}, true},
		{[]any{}, entry{}, true},
		{[]any{int64(9)}, entry{}, true},
		{[]any{int64(1), "v"}, entry{}, true},
		{[]any{int64(1), "v", "x", "tok", "2", "1", int64(500)}, entry{}, true},
	}
	for _, tt := range tests {
		got, err := parseEntry(tt.reply)
		if (err != nil) != tt.err {
			t.Errorf("parseEntry(%v) error %v, want error: %v", tt.reply, err, tt.err)
			continue
		}
		if !tt.err && (got.code != tt.want.code || string(got.value) != string(tt.want.value) || got.delta != tt.want.delta ||
			got.filler != tt.want.filler || got.gen != tt.want.gen || got.stale != tt.want.stale || got.ttl != tt.want.ttl ||
			got.claimed != tt.want.claimed || got.lastFill != tt.want.lastFill) {
			t.Errorf("parseEntry(%v) = %+v, want %+v", tt.reply, got, tt.want)
		}
	}
}

// A reply parseEntry decodes costs no more than the copy of its value: the
// error of a bad reply, which formats the reply, is made only for a bad one.
func TestParseEntryCopiesTheValueOnly(t *testing.T) {
	hit := []any{int64(1), strings.Repeat("v", 64<<10), "12", "tok", "2", "0", int64(500)}
	miss := []any{int64(0), "0", int64(1), "0-0"}
	for name, reply := range map[string][]any{"hit": hit, "miss": miss} {
		want := 0.0
		if name == "hit" {
			want = 1 // []byte(value)
		}
		if got := testing.AllocsPerRun(100, func() {
			if _, err := parseEntry(reply); err != nil {
				t.Fatal(err)
			}
		}); got != want {
			t.Errorf("parseEntry of a %s: %v allocations, want %v", name, got, want)
		}
	}
}

// The keys of an entry share their hash tag, and no two cache keys share a
// Redis key.
func TestKeysOf(t *testing.T) {
	keys := []string{"user:42", "}", "}x", "x}", "{a}b", "a{b}c", "a:lock", "a}:lock", "}:value", "}:filled", "}:claim", "x", "\x00"}
	seen := make(map[string]string)
	for _, key := range keys {
		k := keysOf("p", key)
		all := []string{k.entry, k.lock, k.filled, k.claim}
		for _, rk := range all {
			if tag(rk) != tag(k.entry) || tag(rk) == "" {
				t.Errorf("keys of %q: %q, tags %q and %q", key, all, tag(k.entry), tag(rk))
			}
		}
		for _, rk := range all {
			if other, ok := seen[rk]; ok {
				t.Errorf("%q and %q both use %q", key, other, rk)
			}
			seen[rk] = key
		}
	}
}

// tag returns the part of key that Redis Cluster hashes, "" when it hashes
// all of it.
func tag(key string) string {
	for i := 0; i < len(key); i++ {
		if key[i] == '{' {
			for j := i + 1; j < len(key); j++ {
				if key[j] == '}' {
					return key[i+1 : j]
				}
			}
			return ""
		}
	}
	return ""
}
