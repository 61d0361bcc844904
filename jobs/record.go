package jobs

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Status is what became of one attempt, in a Record.
type Status string

// The statuses of a Record.
const (
	Running   Status = "running"   // the host runs it now
	Succeeded Status = "succeeded" // fn returned nil: the slot is done
	Failed    Status = "failed"    // fn returned an error or panicked, or the lease was lost
	Abandoned Status = "abandoned" // the host stopped without a word: it died, or lost Redis
)

// Record is one attempt of a job in one slot, for operators (History).
type Record struct {
	Job     string    `json:"job"`
	Slot    time.Time `json:"slot"`
	Attempt int       `json:"attempt"` // 1 for the first attempt of the slot
	Host    string    `json:"host"`
	Start   time.Time `json:"start"`
	End     time.Time `json:"end,omitzero"` // zero while Running or when Abandoned
	Status  Status    `json:"status"`
	Error   string    `json:"error,omitempty"` // why it failed, cut to maxErrorLen bytes
}

// The limits that keep a record within dlock.MaxValueLen once escaped.
const (
	maxNameLen  = 200
	maxHostLen  = 100
	maxErrorLen = 200
)

// The kinds of lock a slot's records live in. All but the run are kept
// for the retention.
const (
	kindRun     = "run"     // the lease of the running attempt (its Attempt is 0)
	kindAttempt = "attempt" // attempt n was made
	kindFailed  = "failed"  // attempt n failed
	kindDone    = "done"    // the slot is done: one attempt succeeded
)

// stored is a record as a lock carries it.
type stored struct {
	Record
	Kind string `json:"kind"`
}

func (r Record) encode(kind string) string {
	b, _ := json.Marshal(stored{Record: r, Kind: kind}) // never fails: plain fields
	return string(b)
}

func decode(value string) (stored, bool) {
	var s stored
	if json.Unmarshal([]byte(value), &s) != nil || s.Job == "" || s.Attempt < 0 {
		return stored{}, false
	}
	return s, true
}

// History returns the records of the job named name that Redis still
// keeps (WithRetention), latest slot first, and in a slot, latest attempt
// first. It lists them with SCAN, which goes through every key of the
// deployment: it is for operators, not for every run. On a Redlock it
// needs every node up, as dlock's Scan does.
func (r *Runner) History(ctx context.Context, name string) ([]Record, error) {
	if err := r.check(name); err != nil {
		return nil, err
	}
	slots := map[time.Time]*slotRecords{}
	for info, err := range r.locker.Scan(ctx, globEscape(keyPrefix+name+"@")+"*") {
		if err != nil {
			return nil, fmt.Errorf("jobs: history of %s: %w", strconv.Quote(name), err)
		}
		s, ok := decode(info.Value())
		if !ok || s.Job != name {
			continue
		}
		slot := s.Slot.UTC()
		if slots[slot] == nil {
			slots[slot] = &slotRecords{attempts: map[int]Record{}, ends: map[int]Record{}}
		}
		slots[slot].add(s)
	}
	var records []Record
	for _, s := range slots {
		records = append(records, s.records()...)
	}
	slices.SortFunc(records, func(a, b Record) int {
		return cmp.Or(b.Slot.Compare(a.Slot), cmp.Compare(b.Attempt, a.Attempt))
	})
	return records, nil
}

// slotRecords gathers the records of one slot, to tell each attempt's
// story once.
type slotRecords struct {
	attempts map[int]Record // started
	ends     map[int]Record // succeeded or failed
	running  bool           // the run lease is held
}

func (s *slotRecords) add(r stored) {
	switch r.Kind {
	case kindRun:
		s.running = true
	case kindAttempt:
		s.attempts[r.Attempt] = r.Record
	case kindFailed, kindDone:
		s.ends[r.Attempt] = r.Record
	}
}

// records returns one record per attempt: how it ended if it did; else
// running if it is the last one and the lease is held, abandoned if not.
func (s *slotRecords) records() []Record {
	last := 0
	for n := range s.attempts {
		last = max(last, n)
	}
	var out []Record
	for n, rec := range s.attempts {
		if end, ok := s.ends[n]; ok {
			rec = end
		} else if n != last || !s.running {
			rec.Status = Abandoned
		}
		out = append(out, rec)
	}
	return out
}

// globEscape escapes the characters of a Redis glob pattern.
func globEscape(s string) string {
	var b strings.Builder
	for _, c := range []byte(s) {
		if strings.IndexByte(`*?[]\`, c) >= 0 {
			b.WriteByte('\\')
		}
		b.WriteByte(c)
	}
	return b.String()
}

// truncate cuts s to at most n bytes, on a rune boundary.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}

func utf8RuneStart(b byte) bool { return b&0xC0 != 0x80 }
