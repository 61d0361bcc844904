package cachefill_test

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/dlock-go/dlock/cachefill"
	"github.com/dlock-go/dlock/internal/testenv"
	"github.com/dlock-go/dlock/redistest"
)

// beforeStore is a go-redis hook that calls do once, right before the
// first store.lua call for the entry key entry is sent.
type beforeStore struct {
	entry string
	do    func()
	once  sync.Once
}

func (h *beforeStore) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h *beforeStore) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

func (h *beforeStore) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		// store.lua's call: EVALSHA sha 4 entry lock filled claim, then
		// seven arguments.
		if args := cmd.Args(); len(args) == 14 && fmt.Sprint(args[3]) == h.entry {
			h.once.Do(h.do)
		}
		return next(ctx, cmd)
	}
}

// Whatever go-redis resends while Redis is paused, a loader's store stores
// once (one fill message) and answers that it stored, and an Invalidate
// marks once (g counts one). Both are in flight during one pause of Redis,
// with go-redis's default options, and a Redis timeout long enough for
// go-redis to send each again (WithRedisTimeout; with the default, the
// call gives up before ReadTimeout, and go-redis sends no copy).
func TestResentStoreAndInvalidateTakeEffectOnce(t *testing.T) {
	t.Parallel()
	srv := redistest.NewServer(t)
	rdb := srv.Client() // go-redis's defaults: ReadTimeout 5 s, MaxRetries 3
	var log testenv.Logs
	cache := newCache(t, rdb, cachefill.WithRedisTimeout(30*time.Second),
		cachefill.WithLockTTL(time.Minute), cachefill.WithLogger(slog.New(&log)))
	ctx := testenv.Timeout(t, time.Minute)
	marked, stored := testenv.NewKey(t), testenv.NewKey(t)
	// An entry to invalidate, and the scripts in Redis's cache, so that
	// what the pause holds up is the scripts themselves, not NOSCRIPT.
	if _, err := cache.Get(ctx, marked, time.Hour, (&source{value: "old"}).load); err != nil {
		t.Fatal(err)
	}
	if err := cache.Invalidate(ctx, testenv.NewKey(t)); err != nil {
		t.Fatal(err)
	}
	testenv.WarmPool(t, rdb, 8)
	commands := testenv.Monitor(t, srv.Addr())
	paused := make(chan struct{})
	rdb.AddHook(&beforeStore{entry: cachefill.EntryKey(cache, stored), do: func() {
		srv.Pause()
		close(paused)
	}})
	got := make(chan error, 1)
	go func() {
		v, err := cache.Get(ctx, stored, time.Hour, (&source{value: "new"}).load)
		if err == nil && string(v) != "new" {
			err = fmt.Errorf("value %q", v)
		}
		got <- err
	}()
	<-paused
	invalidated := make(chan error, 1)
	go func() { invalidated <- cache.Invalidate(ctx, marked) }()
	time.Sleep(testenv.ResendPause)
	srv.Resume()
	if err := <-got; err != nil {
		t.Errorf("Get across the pause = %v; want the load's value", err)
	}
	if err := <-invalidated; err != nil {
		t.Errorf("Invalidate across the pause = %v", err)
	}

	// MONITOR tells what Redis ran on a connection of its own, which may
	// lag behind the replies.
	storeEntry, markEntry := cachefill.EntryKey(cache, stored), cachefill.EntryKey(cache, marked)
	testenv.Eventually(t, 10*time.Second, "the store run twice or more: go-redis sent a copy", func() bool {
		return commands.Count(`"evalsha"`, `"4" "`+storeEntry+`"`, `"new"`) >= 2
	})
	testenv.Eventually(t, 10*time.Second, "Invalidate run twice or more: go-redis sent a copy", func() bool {
		return commands.Count(`"evalsha"`, `"1" "`+markEntry+`"`) >= 2
	})
	check := srv.Client()
	if g, err := check.HGet(ctx, markEntry, "g").Result(); err != nil || g != "1" {
		t.Errorf("g of the invalidated entry = %q, %v; want 1: one mark", g, err)
	}
	info, err := check.XInfoStream(ctx, cachefill.FilledKey(cache, stored)).Result()
	if err != nil || info.EntriesAdded != 1 {
		t.Errorf("fill messages added: %d, %v; want 1: one store", info.EntriesAdded, err)
	}
	if n := len(log.Matching(slog.LevelWarn, "store")); n != 0 {
		t.Errorf("%d warnings about the store: it stored, and should say so", n)
	}
}
