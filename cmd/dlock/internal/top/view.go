package top

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/dlock-go/dlock"
)

// What dlock top shows and how it works it out from what it sees: the
// holders it has observed, the rows, their order, and their text. Nothing
// here does I/O or reads the clock, so that the tests can feed it made-up
// observations (view_test.go).

// A topRow is one held lock as dlock top shows it.
type topRow struct {
	key    string
	holder string // the holder's name and fingerprint (see HolderName)
	value  string // the value its lock carries, if any (dlock.WithValue)

	// heldFor is how long top has seen this holder hold the lock. When the
	// holder was there already the first time top saw the key (inherited),
	// it held the lock for longer than that.
	heldFor   time.Duration
	inherited bool

	ttl     time.Duration // -1: no expiry
	fence   int64         // 0: unknown
	waiters int
	rate    float64 // the acquisitions per second top has observed (see keyHistory)
}

// A tracker remembers, from one refresh of dlock top to the next, who held
// each lock and when top saw it change hands.
type tracker struct {
	start  time.Time // the first refresh
	window time.Duration
	keys   map[string]*keyHistory
}

// A keyHistory is what top has seen of one key.
type keyHistory struct {
	holder    string    // the fingerprint of the last holder seen
	since     time.Time // when top first saw that holder
	inherited bool      // that holder held the lock when top first saw the key
	lastSeen  time.Time // the last refresh that found the key held

	// acquired holds the refreshes, within the tracker's window, that
	// found a new holder: each stands for one acquisition at least, since
	// the holders that came and went between two refreshes are not seen.
	acquired []time.Time
}

// newTracker returns a tracker that estimates the rate of acquisitions
// over the last window.
func newTracker(window time.Duration) *tracker {
	return &tracker{window: window, keys: map[string]*keyHistory{}}
}

// observe records the locks that one refresh, at the time at, found held,
// and returns their rows, in the order of locks. Keys not seen for a
// whole window are forgotten.
func (tr *tracker) observe(at time.Time, locks []dlock.LockInfo) []topRow {
	if tr.start.IsZero() {
		tr.start = at
	}
	rows := make([]topRow, 0, len(locks))
	for _, info := range locks {
		h := tr.keys[info.Key]
		switch {
		case h == nil && at.Equal(tr.start): // held before top started
			h = &keyHistory{holder: info.Fingerprint, since: at, inherited: true}
			tr.keys[info.Key] = h
		case h == nil: // acquired since the last refresh, which did not find it
			h = &keyHistory{holder: info.Fingerprint, since: at, acquired: []time.Time{at}}
			tr.keys[info.Key] = h
		case h.holder != info.Fingerprint: // a new holder since the last refresh that saw the key
			h.holder, h.since, h.inherited = info.Fingerprint, at, false
			h.acquired = append(h.acquired, at)
		}
		h.lastSeen = at
		row := topRow{
			key: info.Key, holder: HolderName(info.HolderName, info.Fingerprint), value: info.Value(),
			heldFor: at.Sub(h.since), inherited: h.inherited,
			ttl: info.TTL, fence: info.Fence, waiters: info.Waiters,
		}
		if !info.Since.IsZero() { // the server's clock says when: exact
			row.heldFor, row.inherited = max(at.Sub(info.Since), 0), false
		}
		rows = append(rows, row)
	}
	tr.forget(at)
	for i := range rows {
		rows[i].rate = tr.rate(at, tr.keys[rows[i].key])
	}
	return rows
}

// forget drops the acquisitions older than the window, and the keys whose
// lock top has not seen held for a whole window.
func (tr *tracker) forget(at time.Time) {
	horizon := at.Add(-tr.window)
	for key, h := range tr.keys {
		if h.lastSeen.Before(horizon) {
			delete(tr.keys, key)
			continue
		}
		old := 0
		for old < len(h.acquired) && !h.acquired[old].After(horizon) {
			old++
		}
		h.acquired = h.acquired[old:]
	}
}

// rate estimates the acquisitions per second of a key: those top saw
// within the window, over the window, or over the time since top started
// when that is shorter. It is a lower bound: a refresh that finds a new
// holder counts one, however many came and went since the last.
func (tr *tracker) rate(at time.Time, h *keyHistory) float64 {
	span := min(tr.window, at.Sub(tr.start))
	if span <= 0 {
		return 0
	}
	return float64(len(h.acquired)) / span.Seconds()
}

// A topColumn is a column dlock top sorts by.
type topColumn struct {
	key  byte   // the key that sorts by it
	name string // in --sort and on the header line
	// compare orders two rows, the most worth watching first.
	compare func(a, b topRow) int
}

// topColumns returns the columns dlock top sorts by; the first is the
// default.
func topColumns() []topColumn {
	return []topColumn{
		{key: 'k', name: "key", compare: func(a, b topRow) int { return strings.Compare(a.key, b.key) }},
		{key: 't', name: "ttl", compare: func(a, b topRow) int { return cmp.Compare(ttlOrder(a.ttl), ttlOrder(b.ttl)) }},
		{key: 'w', name: "waiters", compare: func(a, b topRow) int { return cmp.Compare(b.waiters, a.waiters) }},
		{key: 'a', name: "acq/s", compare: func(a, b topRow) int { return cmp.Compare(b.rate, a.rate) }},
		{key: 'h', name: "held", compare: func(a, b topRow) int { return cmp.Compare(b.heldFor, a.heldFor) }},
	}
}

// ttlOrder puts the locks that expire soonest first, and those that never
// expire last.
func ttlOrder(ttl time.Duration) time.Duration {
	if ttl < 0 {
		return time.Duration(1<<63 - 1)
	}
	return ttl
}

// A Sort is the order of dlock top's rows.
type Sort struct {
	column   topColumn
	reversed bool
}

// ParseSort returns the order --sort names: a column's name or key.
func ParseSort(name string) (Sort, bool) {
	for _, c := range topColumns() {
		if name == c.name || len(name) == 1 && name[0] == c.key {
			return Sort{column: c}, true
		}
	}
	return Sort{}, false
}

// pressed returns the order after the key k: another column, or the same
// one reversed. ok is false for a key that sorts nothing.
func (s Sort) pressed(k byte) (next Sort, ok bool) {
	for _, c := range topColumns() {
		if c.key != k {
			continue
		}
		if c.name == s.column.name {
			return Sort{column: c, reversed: !s.reversed}, true
		}
		return Sort{column: c}, true
	}
	return s, false
}

// String is the order as the header line shows it.
func (s Sort) String() string {
	if s.reversed {
		return s.column.name + ", reversed"
	}
	return s.column.name
}

// sortRows sorts rows in the order s, and by key among equals.
func sortRows(rows []topRow, s Sort) {
	slices.SortFunc(rows, func(a, b topRow) int {
		c := s.column.compare(a, b)
		if s.reversed {
			c = -c
		}
		if c != 0 {
			return c
		}
		return strings.Compare(a.key, b.key)
	})
}

// topHeader is the first line of dlock top's table.
func topHeader() []string {
	return []string{"KEY", "HOLDER", "HELD FOR", "TTL", "FENCE", "WAITERS", "ACQ/S", "VALUE"}
}

// cells returns the text of the row's columns, under topHeader.
func (r topRow) cells() []string {
	held := showSpan(r.heldFor)
	if r.inherited {
		held = ">" + held // held before top started
	}
	ttl := "none"
	if r.ttl >= 0 {
		ttl = showSpan(r.ttl)
	}
	fence := "-"
	if r.fence != 0 {
		fence = strconv.FormatInt(r.fence, 10)
	}
	return []string{printable(r.key), r.holder, held, ttl, fence, strconv.Itoa(r.waiters), showRate(r.rate), printable(r.value)}
}

// showSpan writes a duration short, with two units at most: 850ms, 9.5s,
// 42s, 3m12s, 2h05m, 3d04h.
func showSpan(d time.Duration) string {
	switch {
	case d < time.Second:
		return d.Round(time.Millisecond).String()
	case d < 10*time.Second:
		return strconv.FormatFloat(d.Seconds(), 'f', 1, 64) + "s"
	case d < time.Minute:
		return fmt.Sprintf("%ds", int(d.Seconds()))
	case d < time.Hour:
		return fmt.Sprintf("%dm%02ds", int(d.Minutes()), int(d.Seconds())%60)
	case d < 24*time.Hour:
		return fmt.Sprintf("%dh%02dm", int(d.Hours()), int(d.Minutes())%60)
	}
	return fmt.Sprintf("%dd%02dh", int(d.Hours())/24, int(d.Hours())%24)
}

// showRate writes a rate with two significant digits or so: 0, 0.05, 1.5,
// 120.
func showRate(r float64) string {
	switch {
	case r == 0:
		return "0"
	case r < 10:
		return strconv.FormatFloat(r, 'f', 2, 64)
	case r < 100:
		return strconv.FormatFloat(r, 'f', 1, 64)
	}
	return strconv.FormatFloat(r, 'f', 0, 64)
}

// printable returns s as it is when every rune of it prints, else quoted:
// a key or value with a tab would break the columns, and one with an
// escape sequence could take the terminal over.
func printable(s string) string {
	for _, r := range s {
		if !unicode.IsPrint(r) {
			return strconv.Quote(s)
		}
	}
	return s
}

// HolderName names a holder as every verb of dlock shows it: by its name,
// if it has one, and its fingerprint, else by its fingerprint alone.
func HolderName(name, fingerprint string) string {
	if name == "" {
		return fingerprint
	}
	return name + " [" + fingerprint + "]"
}
