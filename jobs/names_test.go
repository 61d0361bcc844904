package jobs_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/dlock-go/dlock/internal/testenv"
	"github.com/dlock-go/dlock/jobs"
)

// jobName returns a name unique to the test that takes size bytes in the
// records (as JSON), made of unit (which takes unitSize bytes there) as
// much as fits, then of "x".
func jobName(t *testing.T, unit string, unitSize, size int) string {
	t.Helper()
	suffix := ":" + testenv.NewKey(t)
	n := (size - len(suffix)) / unitSize
	return strings.Repeat(unit, n) + strings.Repeat("x", size-len(suffix)-n*unitSize) + suffix
}

// A name at the limit of 200 bytes in the records runs once, whatever its
// characters: HTML's (which JSON may escape), multi-byte UTF-8, control
// characters. The records of its slot are the largest there are: a long
// host name, a long error; a second host finds the slot done. A name over
// the limit is refused before Run takes anything.
func TestNameLimits(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		what           string
		unit           string
		unitSize, size int
		ok             bool
	}{
		{"<", "<", 1, 200, true},
		{"&", "&", 1, 200, true},
		{"> over", ">", 1, 201, false},
		{"& over", "&", 1, 201, false},
		{"é", "é", 2, 200, true},
		{"é over", "é", 2, 201, false},
		{"日本", "日本", 6, 200, true},
		{"control", "\x01", 6, 200, true},
		{"control over", "\x01", 6, 201, false},
		{"quote", `"`, 2, 200, true},
	} {
		t.Run(c.what, func(t *testing.T) {
			t.Parallel()
			name := jobName(t, c.unit, c.unitSize, c.size)
			slot := at(t, "2026-11-21T21:00:00Z")
			longHost := strings.Repeat("\x02<", 300)
			a := host(t, longHost, jobs.WithAttempts(2))
			b := host(t, "b", jobs.WithAttempts(2))
			failure := errors.New(strings.Repeat("\x03&", 1000))
			ran := 0
			outcome, err := a.Run(t.Context(), name, slot, func(context.Context) error { ran++; return failure })
			if !c.ok {
				if outcome != 0 || !errors.Is(err, jobs.ErrInvalid) || ran != 0 {
					t.Fatalf("Run of a name over the limit = %v, %v, ran %d times; want ErrInvalid, not run", outcome, err, ran)
				}
				return
			}
			if outcome != jobs.RanAndFailed || !errors.Is(err, failure) || strings.Contains(err.Error(), "record") {
				t.Fatalf("a failing Run = %v, %v; want failed, recorded", outcome, err)
			}
			if outcome, err := a.Run(t.Context(), name, slot, func(context.Context) error { ran++; return nil }); outcome != jobs.Ran || err != nil {
				t.Fatalf("the second attempt = %v, %v; want ran", outcome, err)
			}
			if outcome, err := b.Run(t.Context(), name, slot, func(context.Context) error { ran++; return nil }); outcome != jobs.AlreadyDone || err != nil {
				t.Fatalf("another host's Run = %v, %v; want already done", outcome, err)
			}
			if ran != 2 {
				t.Errorf("ran %d times, want twice (a failure, then a success)", ran)
			}
			records, err := b.History(t.Context(), name)
			if err != nil || len(records) != 2 {
				t.Fatalf("History = %+v, %v", records, err)
			}
			for i, want := range []jobs.Status{jobs.Succeeded, jobs.Failed} {
				r := records[i]
				if r.Job != name || r.Status != want || !strings.HasSuffix(r.Host, "…") || !strings.HasPrefix(longHost, strings.TrimSuffix(r.Host, "…")) {
					t.Errorf("record %d: %+v, want %s, the host cut short", i, r, want)
				}
			}
			if e := records[1].Error; !strings.HasSuffix(e, "…") || !strings.HasPrefix(failure.Error(), strings.TrimSuffix(e, "…")) {
				t.Errorf("the error recorded as %q, want it cut short", e)
			}
		})
	}
}

// A name that is not UTF-8 is refused: its records could not name it.
func TestNameNotUTF8(t *testing.T) {
	t.Parallel()
	name := fmt.Sprintf("%s\xff", testenv.NewKey(t))
	outcome, err := host(t, "a").Run(t.Context(), name, at(t, "2026-11-21T21:00:00Z"), func(context.Context) error { return nil })
	if outcome != 0 || !errors.Is(err, jobs.ErrInvalid) {
		t.Errorf("Run of a name that is not UTF-8 = %v, %v; want ErrInvalid", outcome, err)
	}
}
