package cachefill_test

import (
	"context"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dlock-go/dlock/internal/testenv"
	"github.com/dlock-go/dlock/redistest"
)

// records is a slog.Handler that keeps what it is given.
type records struct {
	mu   sync.Mutex
	recs []slog.Record
}

func (h *records) Enabled(context.Context, slog.Level) bool { return true }

func (h *records) Handle(_ context.Context, r slog.Record) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.recs = append(h.recs, r.Clone())
	return nil
}

func (h *records) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h *records) WithGroup(string) slog.Handler      { return h }

// count returns how many records at level have a message containing msg.
func (h *records) count(level slog.Level, msg string) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	n := 0
	for _, r := range h.recs {
		if r.Level == level && strings.Contains(r.Message, msg) {
			n++
		}
	}
	return n
}

// A Cache without WithLogger logs through slog.Default(): with Redis down,
// the first Get that loads directly says so with a warning, the next ones
// at the debug level, and the first read after Redis is back says that it
// answers again. (Not parallel: it sets the default logger.)
func TestFallbackLogsToTheDefaultLogger(t *testing.T) {
	var log records
	was := slog.Default()
	slog.SetDefault(slog.New(&log))
	srv := redistest.NewServer(t)
	cache := newCache(t, srv.Client()) // go-redis's default options
	slog.SetDefault(was)
	key := testenv.NewKey(t)
	ctx := testenv.Timeout(t, 30*time.Second)
	srv.Kill()
	src := &source{value: "direct"}
	for i := range 3 {
		if v, err := cache.Get(ctx, key, time.Minute, src.load); err != nil || string(v) != "direct" {
			t.Fatalf("Get %d with Redis down = %q, %v; want the load's value", i, v, err)
		}
	}
	if n := log.count(slog.LevelWarn, "loading directly"); n != 1 {
		t.Errorf("%d warnings of loading directly for 3 fallbacks, want 1", n)
	}
	if n := log.count(slog.LevelDebug, "loading directly"); n != 2 {
		t.Errorf("%d debug records of loading directly for 3 fallbacks, want 2", n)
	}
	srv.Start()
	if _, err := cache.Get(ctx, key, time.Minute, src.load); err != nil {
		t.Fatal(err)
	}
	if n := log.count(slog.LevelInfo, "answers again"); n != 1 {
		t.Errorf("%d records that Redis answers again, want 1", n)
	}
	srv.Kill()
	if _, err := cache.Get(ctx, key+":2", time.Minute, src.load); err != nil {
		t.Fatal(err)
	}
	if n := log.count(slog.LevelWarn, "loading directly"); n != 2 {
		t.Errorf("%d warnings of loading directly after a second outage, want 2", n)
	}
}
