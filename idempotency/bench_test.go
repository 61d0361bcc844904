package idempotency_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/dlock-go/dlock/idempotency"
)

// countingHook counts the commands a go-redis client sends: one per round
// trip, or several per pipeline (none here).
type countingHook struct{ commands atomic.Int64 }

func (h *countingHook) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h *countingHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		h.commands.Add(1)
		return next(ctx, cmd)
	}
}

func (h *countingHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		h.commands.Add(int64(len(cmds)))
		return next(ctx, cmds)
	}
}

// BenchmarkMiddleware measures what the Middleware adds to a handler, in
// process (no HTTP connection), against the shared redis-server on
// loopback:
//
//	bare    the handler alone
//	first   a request with a new key: the handler runs, its response is stored
//	replay  a request with a key already answered: the stored response
//
// roundtrips/op counts the commands sent to Redis per request. The request's
// context is cancellable, as a server's is.
func BenchmarkMiddleware(b *testing.B) {
	rdb := redis.NewClient(&redis.Options{Addr: redisAddr})
	defer rdb.Close()
	hook := &countingHook{}
	rdb.AddHook(hook)
	store := mustNew(b, rdb, idempotency.WithPrefix(prefix(b)))
	handler := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusCreated)
		w.Write([]byte(`{"id":"ch_1","amount":4200,"currency":"eur","status":"succeeded"}`))
	})
	guarded := store.Middleware(handler)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	request := func(key string) *http.Request {
		r := httptest.NewRequestWithContext(ctx, http.MethodPost, "/payments", strings.NewReader(`{"order":1001,"amount":4200}`))
		r.Header.Set(idempotency.KeyHeader, `"`+key+`"`)
		return r
	}
	serve := func(b *testing.B, h http.Handler, key func(i int) string) {
		b.ReportAllocs()
		before := hook.commands.Load()
		for i := 0; b.Loop(); i++ {
			w := httptest.NewRecorder()
			h.ServeHTTP(w, request(key(i)))
			if w.Code != http.StatusCreated {
				b.Fatalf("status %d: %s", w.Code, w.Body)
			}
		}
		b.ReportMetric(float64(hook.commands.Load()-before)/float64(b.N), "roundtrips/op")
	}
	var fresh atomic.Int64 // keys of first requests, new across -count runs too
	b.Run("path=bare", func(b *testing.B) {
		serve(b, handler, func(int) string { return "bare" })
	})
	b.Run("path=first", func(b *testing.B) {
		serve(b, guarded, func(int) string { return "first-" + strconv.FormatInt(fresh.Add(1), 10) })
	})
	b.Run("path=replay", func(b *testing.B) {
		serve(b, guarded, func(int) string { return "replayed" })
	})
}
