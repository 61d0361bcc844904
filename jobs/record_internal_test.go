package jobs

import (
	"strings"
	"testing"
	"unicode/utf8"
)

// The largest record of any name that check accepts, from any host, fits
// in dlock.MaxValueLen: names, hosts and errors of every kind of character
// at their limits.
func TestLargestRecordFits(t *testing.T) {
	t.Parallel()
	for _, unit := range []string{"x", "<", "&", `"`, `\`, "é", "日", "😀", "\x01", "\u2028", "\xff"} {
		name := strings.Repeat(unit, maxNameLen)
		for !utf8.ValidString(name) || jsonLen(name) > maxNameLen {
			name = strings.ToValidUTF8(name, "x")
			name = name[:len(name)-len(unit)]
		}
		host := truncate(strings.Repeat(unit, 10*maxHostLen), maxHostLen)
		if n := jsonLen(host); n > maxHostLen {
			t.Errorf("a host of %q cut to %d bytes in a record, over %d", unit, n, maxHostLen)
		}
		if n := jsonLen(truncate(strings.Repeat(unit, 10*maxErrorLen), maxErrorLen)); n > maxErrorLen {
			t.Errorf("an error of %q cut to %d bytes in a record, over %d", unit, n, maxErrorLen)
		}
		if err := checkRecordLen(name, host, 1<<62); err != nil {
			t.Errorf("a name and a host of %q: %v", unit, err)
		}
	}
}

func TestJSONLen(t *testing.T) {
	t.Parallel()
	for s, want := range map[string]int{"": 0, "abc": 3, "<&>": 3, "é": 2, `"\`: 4, "\x01": 6, "\n": 2, "\u2028": 6} {
		if got := jsonLen(s); got != want {
			t.Errorf("jsonLen(%q) = %d, want %d", s, got, want)
		}
	}
	if got := len(Record{Job: "<&>"}.encode(kindRun)); got != len(`{"job":"<&>","slot":"0001-01-01T00:00:00Z","attempt":0,"host":"","start":"0001-01-01T00:00:00Z","status":"","kind":"run"}`) {
		t.Errorf("a record escapes HTML: %s", Record{Job: "<&>"}.encode(kindRun))
	}
}
