package dlock

import (
	"errors"
	"testing"
)

// TestQuorumLost checks why an acquire without a quorum of 5 failed, with
// the nodes still to answer taken into account: the round waits for them
// only while they could change the answer.
func TestQuorumLost(t *testing.T) {
	var (
		y = vote{r: reply{code: acquired}, answered: true}
		h = vote{r: reply{code: held}, answered: true}
		e = vote{err: errors.New("connection refused"), answered: true}
		p = vote{} // not answered yet
	)
	q := &quorum{nodes: make([]*node, 5), need: 3}
	for _, tt := range []struct {
		name  string
		votes []vote
		open  int // lost(votes, false)
		final int // lost(votes, true)
	}{
		{"held by a quorum", []vote{h, h, h, p, p}, lostHeld, lostHeld},
		{"held, two nodes down", []vote{h, h, h, e, e}, lostHeld, lostHeld},
		{"split", []vote{y, y, h, h, h}, lostHeld, lostHeld},
		{"three nodes down", []vote{h, h, e, e, e}, lostFailed, lostFailed},
		{"three down, one pending", []vote{p, h, e, e, e}, lostFailed, lostFailed},
		// The case that made the demo flaky: the live nodes answer first.
		{"two held, three pending", []vote{h, h, p, p, p}, lostUnknown, lostHeld},
		{"two held, one down, two pending", []vote{h, h, e, p, p}, lostUnknown, lostHeld},
		{"two held, two down, one pending", []vote{h, h, e, e, p}, lostUnknown, lostHeld},
		{"all down", []vote{e, e, e, e, e}, lostFailed, lostFailed},
		{"none heard from", []vote{p, p, p, p, p}, lostUnknown, lostFailed},
	} {
		if got := q.lost(tt.votes, false); got != tt.open {
			t.Errorf("%s: during the round: %d, want %d", tt.name, got, tt.open)
		}
		if got := q.lost(tt.votes, true); got != tt.final {
			t.Errorf("%s: at its end: %d, want %d", tt.name, got, tt.final)
		}
	}
}
