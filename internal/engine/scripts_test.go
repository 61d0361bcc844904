package engine

import (
	"context"
	"testing"
	"time"

	"github.com/dlock-go/dlock/redistest"
)

// go-redis resends a command whose reply was lost. An acquire sent twice
// with the same token must find the lock its own the second time, with the
// same fence, not "held by another".
func TestAcquireSentTwice(t *testing.T) {
	t.Parallel()
	n := newNode(redistest.NewServer(t).Client(), ReplicaAck{}, batchLanes, nil)
	ctx := context.Background()
	acquire := func(token string) op {
		return attempt{kind: KindLock, keys: lockKeys("k"), token: token, arg: token, ttl: time.Minute}.op()
	}

	first, err := n.run(ctx, acquire("token-a"))
	if err != nil || first.code != acquired || first.value <= 0 {
		t.Fatalf("first acquire = %+v, %v", first, err)
	}
	again, err := n.run(ctx, acquire("token-a"))
	if err != nil || again.code != acquired || again.value != first.value {
		t.Errorf("the same acquire again = %+v, %v; want acquired with fence %d", again, err, first.value)
	}
	other, err := n.run(ctx, acquire("token-b"))
	if err != nil || other.code != held || other.value <= 0 || other.value > time.Minute.Milliseconds() {
		t.Errorf("another token's acquire = %+v, %v; want held with the holder's pttl", other, err)
	}
}

// Every script loads and runs on a real server: a syntax error in a .lua
// file fails here, whatever the tests of the operations cover.
func TestScriptsLoad(t *testing.T) {
	t.Parallel()
	rdb := redistest.NewServer(t).Client()
	for name, s := range map[string]*script{
		"acquire": acquireScript, "release": releaseScript, "refresh": refreshScript,
		"ttl": ttlScript, "inspect": inspectScript, "force_release": forceReleaseScript,
		"queue_acquire": queueAcquireScript,
		"raise_fence":   raiseFenceScript,
		"hold_acquire":  holdAcquireScript, "hold_release": holdReleaseScript,
		"hold_refresh": holdRefreshScript, "hold_ttl": holdTTLScript,
		"hold_raise_fence": holdRaiseFenceScript,
	} {
		sha, err := rdb.ScriptLoad(context.Background(), s.src).Result()
		if err != nil || sha != s.sha {
			t.Errorf("SCRIPT LOAD %s = %q, %v; want sha %s", name, sha, err, s.sha)
		}
	}
}
