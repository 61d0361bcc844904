package faults_test

import (
	"testing"
	"time"
)

// The checker's judgement on made-up histories: it finds what it claims to
// find, and excuses only what a loss of data explains.
func TestHistoryCheck(t *testing.T) {
	t.Parallel()
	t0 := time.Now()
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	// A step is a holding: it asked at asked, held from from to until
	// (milliseconds after t0), with fence, wrote at the given times (after a
	// pause, or not), and found its token on fewest nodes.
	type write struct {
		ms     int
		paused bool
	}
	type step struct {
		worker             int
		asked, from, until int
		fence              int64
		writes             []write
		fewest             int // nodes counted, 0 for none
	}
	tests := []struct {
		name   string
		steps  []step
		losses []int
		need   int
		want   func(verdict) bool
	}{
		{"one after the other", []step{
			{0, 0, 10, 100, 1, []write{{20, false}, {90, false}}, 0},
			{1, 50, 200, 300, 2, []write{{210, false}}, 0},
		}, nil, 1, func(v verdict) bool {
			return len(v.stale)+len(v.fenceOrder)+len(v.overlaps)+len(v.minority) == 0 && v.accepted == 3
		}},
		{"two at once", []step{
			{0, 0, 10, 100, 1, []write{{20, false}}, 0},
			{1, 5, 50, 150, 2, []write{{60, false}}, 0},
		}, nil, 1, func(v verdict) bool { return len(v.overlaps) == 1 && v.excused == 0 }},
		{"two at once after a loss", []step{
			{0, 0, 10, 100, 1, []write{{20, false}}, 0},
			{1, 5, 50, 150, 2, []write{{60, false}}, 0},
		}, []int{30}, 1, func(v verdict) bool { return len(v.overlaps) == 0 && v.excused == 1 }},
		{"a later holder with a smaller fence", []step{
			{0, 0, 10, 100, 5, []write{{20, false}}, 0},
			{1, 150, 200, 300, 4, []write{{210, false}}, 0},
			{0, 350, 360, 400, 5, []write{{370, false}}, 0},
		}, []int{120}, 1, func(v verdict) bool {
			// the second holding's write is refused (4 < 5); the third's,
			// accepted, is no stale write: it asked after the second held
			return len(v.fenceOrder) >= 1 && v.refused == 1 && len(v.stale) == 0
		}},
		{"a stale write accepted", []step{
			// the later holder got a smaller fence, so the resource takes
			// the earlier holder's write after its own
			{0, 0, 10, 100, 7, []write{{220, false}}, 0},
			{1, 150, 200, 300, 3, []write{{210, false}}, 0},
		}, []int{120}, 1, func(v verdict) bool { return len(v.stale) == 1 && len(v.fenceOrder) == 1 }},
		{"a paused holder refused", []step{
			{0, 0, 10, 100, 1, []write{{20, false}}, 0},
			{1, 5, 120, 200, 2, []write{{130, false}}, 0},
			{0, 0, 10, 100, 1, []write{{140, true}}, 0},
		}, nil, 1, func(v verdict) bool { return v.pausedRefused == 1 && len(v.stale) == 0 }},
		{"a Redlock holder on a minority", []step{
			{0, 0, 10, 100, 1, []write{{20, false}}, 2},
			{1, 150, 200, 300, 2, []write{{210, false}}, 3},
		}, nil, 3, func(v verdict) bool { return len(v.minority) == 1 }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var h history
			var hds []*holding
			for _, s := range tt.steps {
				hd := h.begin(s.worker, at(s.asked), at(s.from), s.fence)
				h.stillMine(hd, at(s.until))
				if s.fewest != 0 {
					h.counted(hd, s.fewest)
				}
				hds = append(hds, hd)
			}
			for _, ms := range tt.losses {
				h.lost(at(ms))
			}
			// The writes, in the order of their times.
			for ms := 0; ms <= 400; ms++ {
				for i, s := range tt.steps {
					for _, w := range s.writes {
						if w.ms != ms {
							continue
						}
						if w.paused {
							h.pausedWrite(hds[i])
						} else {
							h.write(hds[i])
						}
					}
				}
			}
			if v := h.check(tt.need); !tt.want(v) {
				t.Errorf("check() = %+v", v)
			}
		})
	}
}
