package dlock_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/dlock-go/dlock"
	"github.com/dlock-go/dlock/internal/testenv"
	"github.com/dlock-go/dlock/internal/testenv/lockenv"
	"github.com/dlock-go/dlock/redistest"
)

func TestCheckDeployment(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		args []string
		want []string // a word of each warning, in order
	}{
		{"no persistence (the harness default)", nil, []string{"appendonly no"}},
		{"evicting", []string{"--maxmemory", "100mb", "--maxmemory-policy", "allkeys-lru"}, []string{"maxmemory-policy allkeys-lru", "appendonly no"}},
		{"no limit, nothing to evict", []string{"--maxmemory-policy", "volatile-lru"}, []string{"appendonly no"}},
		{"aof every second", []string{"--appendonly", "yes", "--appendfsync", "everysec"}, []string{"everysec"}},
		{"safe", []string{"--appendonly", "yes", "--appendfsync", "always"}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := redistest.NewServer(t, redistest.WithArgs(tc.args...))
			var logs strings.Builder
			locker := lockenv.Locker(t, srv.Client(), dlock.WithLogger(newTestLogger(&logs)))
			warnings, err := locker.CheckDeployment(context.Background())
			if err != nil {
				t.Fatalf("CheckDeployment: %v", err)
			}
			if len(warnings) != len(tc.want) {
				t.Fatalf("warnings %q, want %d of them: %q", warnings, len(tc.want), tc.want)
			}
			for i, w := range warnings {
				if !strings.Contains(w, tc.want[i]) || !strings.Contains(w, srv.Addr()) {
					t.Errorf("warning %q, want it to name %q and the server", w, tc.want[i])
				}
				if !strings.Contains(logs.String(), tc.want[i]) {
					t.Errorf("warning %q was not logged", w)
				}
			}
		})
	}
}

// A user whose ACL refuses CONFIG gets no warnings and no error: nothing is
// known, so nothing is said.
func TestCheckDeploymentWithoutConfigPermission(t *testing.T) {
	t.Parallel()
	srv := redistest.NewServer(t)
	ctx := context.Background()
	if err := srv.Client().Do(ctx, "ACL", "SETUSER", "locker", "on", ">pw", "~*", "&*", "+@all", "-config").Err(); err != nil {
		t.Fatal(err)
	}
	rdb := srv.Client(func(o *redis.Options) { o.Username, o.Password = "locker", "pw" })
	warnings, err := lockenv.Locker(t, rdb).CheckDeployment(ctx)
	if err != nil || len(warnings) != 0 {
		t.Errorf("CheckDeployment without CONFIG = %q, %v; want nothing", warnings, err)
	}
}

func TestCheckDeploymentCluster(t *testing.T) {
	t.Parallel()
	warnings, err := lockenv.Locker(t, newCluster(t)).CheckDeployment(context.Background())
	if err != nil || !slices.ContainsFunc(warnings, func(w string) bool { return strings.Contains(w, "appendonly no") }) {
		t.Errorf("CheckDeployment on a cluster = %q, %v; want the primary's missing append-only file", warnings, err)
	}
}

func TestCheckDeploymentRedisDown(t *testing.T) {
	t.Parallel()
	e := setup(t)
	e.srv.Kill()
	if _, err := e.locker.CheckDeployment(testenv.Timeout(t, time.Second)); err == nil {
		t.Error("CheckDeployment on a dead Redis gave no error")
	}
}

// Errors of the calls that span the deployment say once which operation
// failed on which node, and show no empty key.
func TestDeploymentWideErrorsSayItOnce(t *testing.T) {
	t.Parallel()
	e := setup(t)
	mustObtain(t, e.locker, testenv.Key(t), time.Minute)
	checkMessage := func(what string, err error) {
		t.Helper()
		var nodeErr *dlock.NodeError
		if !errors.As(err, &nodeErr) || strings.Count(err.Error(), "dlock:") != 1 || strings.Contains(err.Error(), `""`) {
			t.Errorf("%s: %q, want one NodeError naming the node once", what, err)
		}
	}
	e.srv.Pause()
	_, err := e.locker.CheckDeployment(testenv.Timeout(t, 100*time.Millisecond))
	checkMessage("CheckDeployment on a paused Redis", err)
	for _, err := range e.locker.Scan(testenv.Timeout(t, 100*time.Millisecond), "*") {
		checkMessage("Scan on a paused Redis", err)
	}
	e.srv.Resume()
	e.srv.Kill()
	_, err = e.locker.CheckDeployment(testenv.Timeout(t, 2*time.Second))
	checkMessage("CheckDeployment on a dead Redis", err)
	for _, err := range e.locker.Scan(testenv.Timeout(t, 2*time.Second), "*") {
		checkMessage("Scan on a dead Redis", err)
	}
}
