package cachefill_test

import (
	"log/slog"
	"testing"
	"time"

	"github.com/dlock-go/dlock/internal/testenv"
	"github.com/dlock-go/dlock/redistest"
)

// A Cache without WithLogger logs through slog.Default(): with Redis down,
// the first Get that loads directly says so with a warning, the next ones
// at the debug level, and the first read after Redis is back says that it
// answers again. (Not parallel: it sets the default logger.)
func TestFallbackLogsToTheDefaultLogger(t *testing.T) {
	var log testenv.Logs
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
	if n := len(log.Matching(slog.LevelWarn, "loading directly")); n != 1 {
		t.Errorf("%d warnings of loading directly for 3 fallbacks, want 1", n)
	}
	if n := len(log.Matching(slog.LevelDebug, "loading directly")); n != 2 {
		t.Errorf("%d debug records of loading directly for 3 fallbacks, want 2", n)
	}
	srv.Start()
	if _, err := cache.Get(ctx, key, time.Minute, src.load); err != nil {
		t.Fatal(err)
	}
	if n := len(log.Matching(slog.LevelInfo, "answers again")); n != 1 {
		t.Errorf("%d records that Redis answers again, want 1", n)
	}
	srv.Kill()
	if _, err := cache.Get(ctx, key+":2", time.Minute, src.load); err != nil {
		t.Fatal(err)
	}
	if n := len(log.Matching(slog.LevelWarn, "loading directly")); n != 2 {
		t.Errorf("%d warnings of loading directly after a second outage, want 2", n)
	}
}
