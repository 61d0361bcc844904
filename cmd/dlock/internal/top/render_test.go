package top

import (
	"errors"
	"strings"
	"testing"
	"time"
)

func TestScreenLines(t *testing.T) {
	var rows []topRow
	for _, key := range []string{"a", "b", "c", "d", "e"} {
		rows = append(rows, topRow{key: key, holder: "0a1b2c3d", ttl: time.Minute, value: strings.Repeat("v", 200)})
	}
	s, _ := ParseSort("ttl")
	st := topState{at: time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC), rows: rows, sort: s}
	cfg := Config{Pattern: "job:*", Interval: time.Second}
	for _, tc := range []struct {
		limit, height int
		wantRows      string
		more          string // the last line
	}{
		{0, 30, "abcde", "e  "},
		{2, 30, "ab", "... and 3 more"},
		{0, 7, "ab", "... and 3 more"}, // 3 lines, a header, 2 rows, 1 to say so
		{0, 3, "", ""},                 // no room for the table
	} {
		cfg.Limit = tc.limit
		lines := screenLines(st, cfg, 100, tc.height)
		if len(lines) > tc.height || !strings.HasPrefix(lines[0], `dlock top: 5 locks matching "job:*" at 12:00:00, every 1s; sort: ttl`) {
			t.Errorf("limit %d, height %d: %d lines, first %q", tc.limit, tc.height, len(lines), lines[0])
			continue
		}
		var got strings.Builder
		for _, line := range lines {
			if len([]rune(line)) > 100 {
				t.Errorf("a line longer than the screen: %q", line)
			}
			if len(line) > 1 && line[1] == ' ' && line[0] >= 'a' && line[0] <= 'e' {
				got.WriteByte(line[0])
			}
		}
		if last := lines[len(lines)-1]; got.String() != tc.wantRows || !strings.HasPrefix(last, tc.more) {
			t.Errorf("limit %d, height %d: rows %q, last line %q; want %q, %q", tc.limit, tc.height, got.String(), last, tc.wantRows, tc.more)
		}
	}
	st.err = errors.New("dlock: redis down\nand more")
	if lines := screenLines(st, cfg, 80, 30); lines[2] != "refresh failed (showing the last locks seen): dlock: redis down" {
		t.Errorf("the error line = %q", lines[2])
	}
}

func TestPlainBlock(t *testing.T) {
	s, _ := ParseSort("key")
	st := topState{at: time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC), sort: s, rows: []topRow{
		{key: "a", holder: "0a1b2c3d", ttl: time.Minute, fence: 7, waiters: 1},
		{key: "b", holder: "4e5f6a7b", ttl: -1},
	}}
	cfg := Config{Pattern: "*", Limit: 1}
	want := "# 2026-11-23T12:00:00Z: 1 of 2 locks matching \"*\", sorted by key\n" +
		"KEY\tHOLDER\tHELD FOR\tTTL\tFENCE\tWAITERS\tACQ/S\tVALUE\n" +
		"a\t0a1b2c3d\t0s\t1m00s\t7\t1\t0\t\n\n"
	if got := plainBlock(st, cfg); got != want {
		t.Errorf("plainBlock =\n%q, want\n%q", got, want)
	}
	st.rows = nil
	if got := plainBlock(st, cfg); got != "# 2026-11-23T12:00:00Z: 0 locks matching \"*\", sorted by key\n\n" {
		t.Errorf("plainBlock of no lock = %q", got)
	}
}
