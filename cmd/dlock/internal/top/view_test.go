package top

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/dlock-go/dlock"
)

// lockSeen is a lock as Scan reports it, for the tracker's tests.
func lockSeen(key, holder string) dlock.LockInfo {
	return dlock.LockInfo{Key: key, Held: true, Fingerprint: holder, TTL: time.Minute}
}

// TestTrackerHoldersAndRates feeds a tracker refreshes a second apart and
// checks, after each, what it says of each key.
func TestTrackerHoldersAndRates(t *testing.T) {
	start := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	at := func(s int) time.Time { return start.Add(time.Duration(s) * time.Second) }
	type want struct {
		heldFor   time.Duration
		inherited bool
		rate      float64
	}
	tr := newTracker(10 * time.Second)
	for _, step := range []struct {
		at    int
		locks []dlock.LockInfo
		want  map[string]want
	}{
		{0, []dlock.LockInfo{lockSeen("a", "h1")}, map[string]want{"a": {0, true, 0}}},
		{1, []dlock.LockInfo{lockSeen("a", "h1")}, map[string]want{"a": {time.Second, true, 0}}},
		// a new holder: one acquisition in the 2s top has watched
		{2, []dlock.LockInfo{lockSeen("a", "h2")}, map[string]want{"a": {0, false, 0.5}}},
		// b appears after the start: acquired, not inherited
		{4, []dlock.LockInfo{lockSeen("a", "h2"), lockSeen("b", "h3")}, map[string]want{"a": {2 * time.Second, false, 0.25}, "b": {0, false, 0.25}}},
		// a is free, then held again by its last holder: seen as one holding
		{5, []dlock.LockInfo{lockSeen("b", "h3")}, map[string]want{"b": {time.Second, false, 0.2}}},
		{6, []dlock.LockInfo{lockSeen("a", "h2"), lockSeen("b", "h4")}, map[string]want{"a": {4 * time.Second, false, 1.0 / 6}, "b": {0, false, 2.0 / 6}}},
		// the window is 10s: the acquisitions at 2s and 4s have left it
		{13, []dlock.LockInfo{lockSeen("a", "h2"), lockSeen("b", "h4")}, map[string]want{"a": {11 * time.Second, false, 0}, "b": {7 * time.Second, false, 0.2}}},
	} {
		rows := tr.observe(at(step.at), step.locks)
		if len(rows) != len(step.want) {
			t.Fatalf("at %ds: %d rows, want %d", step.at, len(rows), len(step.want))
		}
		for _, r := range rows {
			w := step.want[r.key]
			if r.heldFor != w.heldFor || r.inherited != w.inherited || r.rate != w.rate {
				t.Errorf("at %ds, %s: held for %v (inherited %t), %v/s; want %v (%t), %v/s",
					step.at, r.key, r.heldFor, r.inherited, r.rate, w.heldFor, w.inherited, w.rate)
			}
		}
	}
	tr.observe(at(30), nil)
	if len(tr.keys) != 0 {
		t.Errorf("keys not seen for a whole window are kept: %v", tr.keys)
	}
}

func TestSortRows(t *testing.T) {
	rows := []topRow{
		{key: "c", ttl: 5 * time.Second, waiters: 0, rate: 2, heldFor: time.Minute},
		{key: "a", ttl: -1, waiters: 3, rate: 0, heldFor: time.Second},
		{key: "b", ttl: time.Second, waiters: 3, rate: 0.5, heldFor: time.Hour},
		{key: "d", ttl: 5 * time.Second, waiters: 1, rate: 0.5, heldFor: 0},
	}
	for _, tc := range []struct {
		keys string // pressed from the default order
		want string // the keys of the rows, in order
		says string // on the header line
	}{
		{"", "abcd", "key"},
		{"k", "dcba", "key, reversed"},
		{"t", "bcda", "ttl"},            // no expiry last; c and d tie, by key
		{"tt", "acdb", "ttl, reversed"}, // ties stay by key
		{"w", "abdc", "waiters"},
		{"a", "cbda", "acq/s"},
		{"h", "bcad", "held"},
		{"hk", "abcd", "key"},
		{"x", "abcd", "key"}, // sorts nothing
	} {
		s, _ := ParseSort("key")
		for _, k := range []byte(tc.keys) {
			s, _ = s.pressed(k)
		}
		sorted := slices.Clone(rows)
		sortRows(sorted, s)
		var got strings.Builder
		for _, r := range sorted {
			got.WriteString(r.key)
		}
		if got.String() != tc.want || s.String() != tc.says {
			t.Errorf("after %q: %s, sort %q; want %s, %q", tc.keys, got.String(), s, tc.want, tc.says)
		}
	}
}

func TestSortByName(t *testing.T) {
	for _, name := range []string{"key", "ttl", "waiters", "acq/s", "held", "t"} {
		if _, ok := ParseSort(name); !ok {
			t.Errorf("--sort %s refused", name)
		}
	}
	for _, name := range []string{"", "TTL", "fence", "q"} {
		if _, ok := ParseSort(name); ok {
			t.Errorf("--sort %q accepted", name)
		}
	}
}

func TestShowSpanAndRate(t *testing.T) {
	for _, tc := range []struct {
		d    time.Duration
		want string
	}{
		{0, "0s"},
		{850 * time.Millisecond, "850ms"},
		{9500 * time.Millisecond, "9.5s"},
		{42*time.Second + 900*time.Millisecond, "42s"},
		{3*time.Minute + 12*time.Second, "3m12s"},
		{2*time.Hour + 5*time.Minute, "2h05m"},
		{76 * time.Hour, "3d04h"},
	} {
		if got := showSpan(tc.d); got != tc.want {
			t.Errorf("showSpan(%v) = %q, want %q", tc.d, got, tc.want)
		}
	}
	for _, tc := range []struct {
		r    float64
		want string
	}{{0, "0"}, {1.0 / 60, "0.02"}, {1.5, "1.50"}, {42.25, "42.2"}, {120.4, "120"}} {
		if got := showRate(tc.r); got != tc.want {
			t.Errorf("showRate(%v) = %q, want %q", tc.r, got, tc.want)
		}
	}
}

func TestRowCells(t *testing.T) {
	for _, tc := range []struct {
		row  topRow
		want string
	}{
		{topRow{key: "job:a", holder: "0a1b2c3d", heldFor: 3 * time.Second, inherited: true, ttl: 20 * time.Second, fence: 17, waiters: 2, rate: 0.5, value: "host-b pid 4121"},
			"job:a|0a1b2c3d|>3.0s|20s|17|2|0.50|host-b pid 4121"},
		{topRow{key: "k\tey", holder: "0a1b2c3d", ttl: -1, value: "\x1b[2J"},
			`"k\tey"|0a1b2c3d|0s|none|-|0|0|"\x1b[2J"`}, // no tab, no escape sequence
	} {
		if got := strings.Join(tc.row.cells(), "|"); got != tc.want {
			t.Errorf("cells = %s, want %s", got, tc.want)
		}
	}
}
