package faults_test

import (
	"fmt"
	"sync"
	"time"
)

// A history is what a checker run observed: each holding of the lock, each
// write to a fenced resource, and when Redis lost data. The resource is in
// the history: it accepts a write whose fence is at least the highest it
// has accepted, and refuses the others, as a database that stores the fence
// with the data would.
//
// All times come from this process's monotonic clock, which also measures
// a Lock's Until, so that "before" and "after" are exact.
type history struct {
	mu       sync.Mutex
	seq      int64 // numbers the write attempts, in the order the resource saw them
	highest  int64 // the highest fence accepted
	holdings []*holding
	losses   []time.Time // just before Redis lost data (FLUSHALL, a restart)
	// just before a minority of Redlock nodes lost their data, which leaves
	// a holder whose quorum included them on a minority until its next
	// refresh, but lets nobody else in (see TestCheckerRedlockNodesRestarted)
	minorityLosses []time.Time
	// store, if set, is a real resource that every write with a fence goes
	// to as well, in the order of seq (under mu): it reports whether it
	// accepted the write, and the history takes its word
	store func(fence int64) (bool, error)
	// what went wrong with store: errors, and answers other than the
	// register's
	storeFaults []string
}

// A holding is one time a worker held the lock.
type holding struct {
	worker int
	asked  time.Time // Obtain or Do was called
	from   time.Time // the worker knew the lock was its own
	// the last time the worker checked that the lock was still its own
	// (Lock.Err nil, Lock.Until ahead) before it wrote; zero before the first
	until time.Time
	fence int64
	// write attempts, by seq: the first and last of all (what a resource
	// without fences would accept), and of those accepted; 0 for none
	firstTry, lastTry int64
	firstOK, lastOK   int64
	accepted, refused int
	// writes made after a pause between the check and the write, during
	// which another holding's write was accepted, and refused
	pausedRefused int
	// Redlock: the fewest nodes found holding the token at a time the lock
	// was valid by its own account (Until ahead after the count); 0 if never
	// counted
	fewest int
}

func (h *history) begin(worker int, asked, from time.Time, fence int64) *holding {
	h.mu.Lock()
	defer h.mu.Unlock()
	hd := &holding{worker: worker, asked: asked, from: from, fence: fence}
	h.holdings = append(h.holdings, hd)
	return hd
}

// stillMine notes that the worker found the lock its own at now.
func (h *history) stillMine(hd *holding, now time.Time) {
	h.mu.Lock()
	defer h.mu.Unlock()
	hd.until = now
}

// write is one write of hd to the resource; it reports whether the resource
// accepted it. A fence of 0 (none could be had) is refused.
func (h *history) write(hd *holding) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.seq++
	if hd.firstTry == 0 {
		hd.firstTry = h.seq
	}
	hd.lastTry = h.seq
	accept := hd.fence > 0 && hd.fence >= h.highest
	if h.store != nil && hd.fence > 0 {
		stored, err := h.store(hd.fence)
		switch {
		case err != nil:
			h.storeFaults = append(h.storeFaults, fmt.Sprintf("write %d of %v: %v", h.seq, hd, err))
		case stored != accept:
			h.storeFaults = append(h.storeFaults, fmt.Sprintf("write %d of %v: the resource accepted it: %t, the register: %t", h.seq, hd, stored, accept))
		}
		accept = stored && err == nil
	}
	if !accept {
		hd.refused++
		return false
	}
	h.highest = hd.fence
	if hd.firstOK == 0 {
		hd.firstOK = h.seq
	}
	hd.lastOK = h.seq
	hd.accepted++
	return true
}

// pausedWrite is the write of a holder that paused after its last check,
// while another holding wrote: a stale write, which must be refused.
func (h *history) pausedWrite(hd *holding) bool {
	ok := h.write(hd)
	h.mu.Lock()
	defer h.mu.Unlock()
	if !ok {
		hd.pausedRefused++
	}
	return ok
}

// counted notes that n nodes held hd's token while its lock was valid.
func (h *history) counted(hd *holding, n int) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if hd.fewest == 0 || n < hd.fewest {
		hd.fewest = n
	}
}

// lost notes that Redis is about to lose its data.
func (h *history) lost(at time.Time) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.losses = append(h.losses, at)
}

// lostOnMinority notes that a minority of Redlock nodes is about to lose
// its data.
func (h *history) lostOnMinority(at time.Time) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.minorityLosses = append(h.minorityLosses, at)
}

// acceptedSince reports whether a holding other than hd had a write
// accepted after seq.
func (h *history) acceptedSince(hd *holding, seq int64) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, other := range h.holdings {
		if other != hd && other.lastOK > seq {
			return true
		}
	}
	return false
}

func (h *history) now() int64 {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.seq
}

// A verdict is what check found.
type verdict struct {
	holdings, accepted, refused int
	// stale writes accepted: a holding's write accepted after one of a
	// holding that asked for the lock only once the first held it
	stale []string
	// holdings whose fences are out of the order of their grants (the
	// later asked for the lock only once the earlier held it), which lets
	// a resource accept a stale write
	fenceOrder []string
	// two holdings at once: each found the lock its own at a time the other
	// did too, with no loss of data while either asked for or held it
	overlaps []string
	excused  int // overlaps while Redis lost data
	// Redlock holdings that were valid by their own account while fewer
	// than a quorum of nodes held their token, with no data lost on any node
	minority []string
	// writes of holders that paused after their last check, while another
	// holding wrote, that the resource refused: a resource without fences
	// would have accepted each of them
	pausedRefused int
	// what went wrong with the real resource (history.store)
	storeFaults []string
}

// check judges the history, need being the size of a quorum (1 for a
// single deployment). It must be called once the workers are done.
func (h *history) check(need int) verdict {
	h.mu.Lock()
	defer h.mu.Unlock()
	var v verdict
	v.holdings = len(h.holdings)
	v.storeFaults = h.storeFaults
	for _, a := range h.holdings {
		v.accepted += a.accepted
		v.refused += a.refused
		v.pausedRefused += a.pausedRefused
		if a.fewest != 0 && a.fewest < need && !lostDuring(h.losses, a) && !lostDuring(h.minorityLosses, a) {
			v.minority = append(v.minority, fmt.Sprintf("%v on %d nodes", a, a.fewest))
		}
		for _, b := range h.holdings {
			if a == b {
				continue
			}
			// a held the lock before b asked for it: b is a later holder.
			if a.from.Before(b.asked) {
				if b.firstOK != 0 && a.lastOK > b.firstOK {
					v.stale = append(v.stale, fmt.Sprintf("%v accepted after %v", a, b))
				}
				if a.fence > 0 && b.fence > 0 && a.fence >= b.fence {
					v.fenceOrder = append(v.fenceOrder, fmt.Sprintf("%v, then %v", a, b))
				}
			}
			// b found the lock its own while a still did.
			if !a.from.After(b.from) && !a.until.IsZero() && !b.until.IsZero() && b.from.Before(a.until) {
				if lostDuring(h.losses, a) || lostDuring(h.losses, b) {
					v.excused++
				} else {
					v.overlaps = append(v.overlaps, fmt.Sprintf("%v and %v", a, b))
				}
			}
		}
	}
	return v
}

// lostDuring reports whether one of losses happened while hd asked for or
// held the lock.
func lostDuring(losses []time.Time, hd *holding) bool {
	for _, at := range losses {
		if !at.Before(hd.asked) && !at.After(hd.until) {
			return true
		}
	}
	return false
}

func (hd *holding) String() string {
	return fmt.Sprintf("{worker %d, fence %d, asked %s, held %s to %s, writes %d-%d accepted %d-%d}",
		hd.worker, hd.fence, hd.asked.Format("15:04:05.000000"), hd.from.Format("15:04:05.000000"),
		hd.until.Format("15:04:05.000000"), hd.firstTry, hd.lastTry, hd.firstOK, hd.lastOK)
}
