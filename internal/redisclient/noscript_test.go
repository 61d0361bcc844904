package redisclient_test

import (
	"context"
	"errors"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/dlock-go/dlock/internal/redisclient"
	"github.com/dlock-go/dlock/redistest"
)

// NoScript tells a server's NOSCRIPT apart, however go-redis reports it:
// from EvalSha, from Process and from a pipeline; other errors are not it.
func TestNoScript(t *testing.T) {
	rdb := redistest.NewServer(t).Client()
	ctx := context.Background()
	const unknown = "0000000000000000000000000000000000000000"
	evalsha := rdb.EvalSha(ctx, unknown, []string{"k"}).Err()
	processed := redis.NewCmd(ctx, "evalsha", unknown, 1, "k")
	_ = rdb.Process(ctx, processed)
	pipe := rdb.Pipeline()
	piped := pipe.EvalSha(ctx, unknown, []string{"k"})
	_, _ = pipe.Exec(ctx)
	rdb.Set(ctx, "s", "v", 0)
	wrongType := rdb.LPush(ctx, "s", "x").Err()
	for _, tc := range []struct {
		name string
		err  error
		want bool
	}{
		{"EvalSha", evalsha, true},
		{"Process", processed.Err(), true},
		{"pipeline", piped.Err(), true},
		{"WRONGTYPE", wrongType, false},
		{"other", errors.New("NOSCRIPT in a message of ours"), false},
		{"nil", nil, false},
	} {
		if got := redisclient.NoScript(tc.err); got != tc.want {
			t.Errorf("%s: NoScript(%v) = %v, want %v", tc.name, tc.err, got, tc.want)
		}
	}
}
