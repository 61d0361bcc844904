package engine

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/dlock-go/dlock/redistest"
)

// matchPattern must agree with Redis itself: the same keys, the same
// patterns, compared with what KEYS answers.
func TestMatchPatternAgreesWithRedis(t *testing.T) {
	t.Parallel()
	rdb := redistest.NewServer(t).Client()
	ctx := context.Background()
	keys := []string{
		"job:a", "job:b", "jab:c", "xob:d", "job:", "a", "ab", "abc", "b", "*star", "a*b",
		"[x]", "x", "h[", "hello", "hallo", "hxllo", "hllo", "heeeello", "a\\b", "?", "-", "]",
		"aaaaaaaaaaaaaaaaaaaaaaab",
	}
	for _, k := range keys {
		rdb.Set(ctx, k, "v", 0)
	}
	for _, pattern := range []string{
		"*", "job:*", "j?b:*", "[jx]ob:*", "[^j]*", "[a-c]*", "[c-a]*", "*\\**", "\\[x]", "[x]",
		"h[ae]llo", "h[^e]llo", "h*llo", "h?llo", "a*b*", "*a*a*a*a*a*b", "a\\\\b", "\\?", "[-]",
		"[]]", "h[", "[\\]]", "", "?", "??", "*?*", "[a-]*", "[\\-a]*",
	} {
		want := rdb.Keys(ctx, pattern).Val()
		var got []string
		for _, k := range keys {
			if matchPattern(pattern, k) {
				got = append(got, k)
			}
		}
		slices.Sort(want)
		slices.Sort(got)
		if !slices.Equal(got, want) {
			t.Errorf("pattern %q: we match %q, Redis matches %q", pattern, got, want)
		}
	}
}

func TestMatchPatternOnLongKeys(t *testing.T) {
	t.Parallel()
	key := strings.Repeat("a", 1<<20)
	if matchPattern("*a*a*a*a*a*a*a*a*b", key) {
		t.Error("matched a key with no b")
	}
	if !matchPattern("*a*a*a*a*a*a*a*a*a", key) {
		t.Error("did not match")
	}
}

func TestLockKeyOfInvertsSideKey(t *testing.T) {
	t.Parallel()
	for _, key := range sampleKeys()[1:] { // not "": no lock has it
		side := sideKey(fenceKind, key)
		if got, ok := lockKeyOf(fenceKind, side); !ok || got != key {
			t.Errorf("lockKeyOf(%q) = %q, %v; want %q", side, got, ok, key)
		}
	}
	for _, side := range []string{
		"", "dlock:fence", "dlock:chan:{a}", "dlock:fence:nope", "dlock:fence{a}b}", "dlock:fence{}",
		"dlock:fence#{999999}x", "dlock:fence#x", "dlock:fenceX",
	} {
		if key, ok := lockKeyOf(fenceKind, side); ok {
			t.Errorf("lockKeyOf(%q) = %q, true; want no lock key", side, key)
		}
	}
}

func FuzzLockKeyOf(f *testing.F) {
	for _, key := range sampleKeys()[:16] {
		f.Add(key)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if s != "" {
			if got, ok := lockKeyOf(fenceKind, sideKey(fenceKind, s)); !ok || got != s {
				t.Errorf("lockKeyOf(sideKey(%q)) = %q, %v", s, got, ok)
			}
		}
		if key, ok := lockKeyOf(fenceKind, s); ok && sideKey(fenceKind, key) != s {
			t.Errorf("lockKeyOf(%q) = %q, whose side key is %q", s, key, sideKey(fenceKind, key))
		}
	})
}
