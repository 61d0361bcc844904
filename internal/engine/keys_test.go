package engine

import (
	"context"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/dlock-go/dlock/internal/slot"
	"github.com/dlock-go/dlock/redistest"
)

func sampleKeys() []string {
	keys := []string{
		"", "k", "order:42", "{user:7}:cart", "a{}b", "a}b", "a{b", "}{", "{}", "{a", "a}", "}",
		"{{a}}", "x{y}z{w}", "订单:支付", "\x00\xff", strings.Repeat("z", 1000) + "}",
	}
	rng := rand.New(rand.NewPCG(1, 2))
	alphabet := []byte("ab{}:\x00")
	for range 300 {
		b := make([]byte, 1+rng.IntN(12))
		for i := range b {
			b[i] = alphabet[rng.IntN(len(alphabet))]
		}
		keys = append(keys, string(b))
	}
	return keys
}

// Every side key must hash to its lock key's slot, as Redis Cluster itself
// computes it, or the scripts fail with CROSSSLOT on a Cluster.
func TestSideKeysShareTheSlot(t *testing.T) {
	t.Parallel()
	srv := redistest.NewServer(t, redistest.WithArgs("--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf"))
	rdb := srv.Client()
	ctx := context.Background()
	redisSlot := func(key string) int64 {
		t.Helper()
		n, err := rdb.ClusterKeySlot(ctx, key).Result()
		if err != nil {
			t.Fatalf("CLUSTER KEYSLOT %q: %v", key, err)
		}
		return n
	}
	for _, key := range sampleKeys() {
		want := redisSlot(key)
		if got := int64(slot.Of(key)); got != want {
			t.Errorf("slot.Of(%q) = %d, Redis says %d", key, got, want)
		}
		side := sideKey(fenceKind, key)
		if got := redisSlot(side); got != want {
			t.Errorf("sideKey(%q) = %q in slot %d, want the key's slot %d", key, side, got, want)
		}
		marker, _, _ := newMarkedToken(side, "s", "~holder{1}", ".value}")
		if got := redisSlot(marker); got != want {
			t.Errorf("the release marker of %q, %q, is in slot %d, want the key's slot %d", key, marker, got, want)
		}
	}
}

// A holding's release marker is the fence key's name with "freed" for
// "fence", a colon and the holder's name, in one string with its token.
func TestMarkerKeyNames(t *testing.T) {
	for _, key := range sampleKeys()[:20] {
		fence := sideKey(fenceKind, key)
		marker, name, token := newMarkedToken(fence, "w", "~host", ".v")
		if want := "dlock:freed" + fence[len("dlock:fence"):] + ":" + name; marker != want {
			t.Errorf("marker of %q = %q, want %q", key, marker, want)
		}
		if name != "w"+token || len(token) != RandomTokenLen+len("~host.v") || !strings.HasSuffix(token, "~host.v") {
			t.Errorf("name %q, token %q: want the class, then the random part, the holder and the value", name, token)
		}
		if m := markerKey(fence, name); m != marker {
			t.Errorf("markerKey(%q, %q) = %q, want %q", fence, name, m, marker)
		}
	}
	if marker, name, token := newMarkedToken("", "", "", ""); marker != "" || name != token || len(token) != RandomTokenLen {
		t.Errorf("newMarkedToken without a fence key = %q, %q, %q", marker, name, token)
	}
}

// No two lock keys share a side key, and no side key is a lock key's own.
func TestSideKeysAreDistinct(t *testing.T) {
	t.Parallel()
	owner := map[string]string{}
	keys := append(sampleKeys(), "{k}", "{k}:x", "dlock:fence{k}", "dlock:fence:{k}")
	for _, key := range keys {
		side := sideKey(fenceKind, key)
		if side == key {
			t.Errorf("sideKey(%q) is the key itself", key)
		}
		if other, ok := owner[side]; ok && other != key {
			t.Errorf("%q and %q share the side key %q", key, other, side)
		}
		owner[side] = key
	}
}

func FuzzSideKey(f *testing.F) {
	for _, key := range sampleKeys()[:16] {
		f.Add(key)
	}
	f.Fuzz(func(t *testing.T, key string) {
		side := sideKey(fenceKind, key)
		if slot.Of(side) != slot.Of(key) {
			t.Errorf("sideKey(%q) = %q: slot %d, want %d", key, side, slot.Of(side), slot.Of(key))
		}
	})
}

// The scripts find a lock's watch channel from its fence key's name, and
// queueKeys builds the side keys sideKey names.
func TestSideKeyNamesDerive(t *testing.T) {
	for _, key := range sampleKeys() {
		fence := sideKey(fenceKind, key)
		if want := "dlock:watch" + fence[len("dlock:fence"):]; sideKey(watchKind, key) != want {
			t.Errorf("watch channel of %q = %q, want %q (release.lua derives it)", key, sideKey(watchKind, key), want)
		}
		want := []string{key, fence, sideKey(queueKind, key), sideKey(leaseKind, key)}
		if got := queueKeys(key); !slices.Equal(got, want) {
			t.Errorf("queueKeys(%q) = %q, want %q", key, got, want)
		}
	}
}
