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

	"github.com/dlock-go/dlock"
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

// The limits that keep a record within dlock.MaxValueLen, in bytes of the
// record (JSON, see encode): a job name is refused over maxNameLen, a host
// name and an error are cut to fit theirs. checkRecordLen checks the
// largest record a name and a host can make.
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

// encode returns the record as the value of a lock: JSON without HTML
// escaping, so that "<", ">" and "&" take one byte each, as they do in
// jsonLen. It never fails: plain fields, and times of years 1 to 9999
// (checkSlot).
func (r Record) encode(kind string) string {
	var b strings.Builder
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(stored{Record: r, Kind: kind})
	return strings.TrimSuffix(b.String(), "\n")
}

// jsonLen returns the length of s in a record: as a JSON string without
// its quotes. Control characters take up to six bytes, quotes and
// backslashes two; the rest of valid UTF-8 is as long as it is.
func jsonLen(s string) int {
	var b strings.Builder
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s) // never fails for a string
	return b.Len() - len(`""`+"\n")
}

// checkRecordLen returns an error wrapping ErrInvalid if a record of the
// job named name, made by this host, could be over dlock.MaxValueLen: the
// record of the longest kind, status, error and times.
func checkRecordLen(name, host string, attempts int) error {
	longest := time.Date(9999, 12, 31, 23, 59, 59, 999999999, time.UTC)
	rec := Record{
		Job: name, Slot: longest, Attempt: attempts, Host: host, Start: longest, End: longest,
		Status: Abandoned, Error: strings.Repeat("x", maxErrorLen), // cutError keeps errors this short
	}
	if n := len(rec.encode(kindAttempt)); n > dlock.MaxValueLen {
		return fmt.Errorf("%w: the records of job %s from host %s take up to %d bytes, over dlock.MaxValueLen (%d)",
			ErrInvalid, strconv.Quote(name), strconv.Quote(host), n, dlock.MaxValueLen)
	}
	return nil
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
// An attempt whose start record expired before its end record (written
// later, kept as long) is told by its end record.
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
	for n, end := range s.ends {
		if _, ok := s.attempts[n]; !ok {
			out = append(out, end)
		}
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

// truncate cuts s so that it takes at most n bytes in a record (jsonLen),
// on a rune boundary, ending it with "…" if it was cut. Bytes that are
// not UTF-8 become U+FFFD, as JSON has them.
func truncate(s string, n int) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	if jsonLen(s) <= n {
		return s
	}
	const more = "…"
	used := 0
	for i, c := range s {
		used += jsonLen(string(c))
		if used > n-len(more) {
			return s[:i] + more
		}
	}
	return s // not reached: s is longer than n
}
