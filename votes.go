package dlock

// count tells how many votes have answered with code, and how many failed.
func count(votes []vote, code int64) (yes, failed int) {
	for _, v := range votes {
		switch {
		case !v.Answered || v.Err != nil:
			failed++
		case v.R.code == code:
			yes++
		}
	}
	return yes, failed
}

// mayHold reports whether a node may have granted the lock: it said so, or
// its answer is unknown.
func mayHold(v vote) bool {
	return !v.Answered || v.Err != nil || v.R.code == acquired
}

// pending counts the nodes that have not answered yet.
func (q *quorum) pending(votes []vote) int {
	n := 0
	for _, v := range votes {
		if !v.Answered {
			n++
		}
	}
	return n
}

// Why an acquire without a quorum failed, as lost tells it.
const (
	lostUnknown = iota // it depends on nodes that have not answered yet
	lostHeld           // another holder has it
	lostFailed         // too many nodes failed for any quorum
)

// lost tells why an acquire round without a quorum failed. Another holder
// has the lock when a node said so and the nodes that failed are few
// enough for a quorum, or when a quorum answered but did not grant it;
// otherwise too many nodes failed. A node that has not answered yet may
// still fail or say "held": while that would change the answer, lost says
// lostUnknown, unless the round is over (final), where such nodes count
// for neither.
func (q *quorum) lost(votes []vote, final bool) int {
	others, _ := count(votes, held)
	errored, pending := 0, 0
	for _, v := range votes {
		switch {
		case !v.Answered:
			pending++
		case v.Err != nil:
			errored++
		}
	}
	spare := len(votes) - q.need // failures a quorum can take
	switch {
	case others > 0 && errored+pending <= spare || len(votes)-errored-pending >= q.need:
		return lostHeld
	case errored > spare:
		return lostFailed
	case pending > 0 && !final:
		return lostUnknown
	case others > 0:
		return lostHeld
	default:
		return lostFailed
	}
}

// leastTTL returns the least time to live (value) among the answers that
// match, ignoring those without expiry; -1 if there is none, unknownTTL if
// the answers do not tell.
func leastTTL(votes []vote, match func(reply) bool) int64 {
	least := int64(-1)
	unknown := false
	for _, v := range votes {
		if !v.Answered || v.Err != nil || !match(v.R) {
			continue
		}
		switch {
		case v.R.value == unknownTTL:
			unknown = true
		case v.R.value >= 0 && (least < 0 || v.R.value < least):
			least = v.R.value
		}
	}
	if least < 0 && unknown {
		return unknownTTL
	}
	return least
}
