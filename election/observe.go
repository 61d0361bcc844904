package election

import (
	"context"
	"errors"
	"time"

	"github.com/dlock-go/dlock"
	"github.com/dlock-go/dlock/internal/door"
	"github.com/dlock-go/dlock/observe"
)

// Observe returns a channel that receives the leader of the election: the
// current one first (a zero Leader if the seat is empty), then each change,
// as it happens, and a zero Leader whenever the seat empties. It delivers
// the latest state, not a log: a reader that falls behind a burst of
// changes skips some, and the last value it receives is the current one.
// Terms received increase, but for the zero Leaders of an empty seat.
//
// Changes are pushed: Observe waits for the leader's release or the end of
// its lease as dlock's WaitReleaseOf does, and while the seat is empty, for
// the next leader's word (observers hold the election's vacancy key, which
// the next leader deletes); it polls only if a word is lost, once a lease.
// An error of Redis makes it try again after a pause, up to a lease long.
//
// The channel is closed when ctx ends, or when the dlock Client is closed
// (or the Election was not made by New). The goroutine that feeds it ends then too:
// cancel ctx when done.
func (e *Election) Observe(ctx context.Context) <-chan Leader {
	ch := make(chan Leader, 1)
	if e.usable() != nil {
		close(ch)
		return ch
	}
	o := &observer{e: e, ch: ch, last: Leader{Term: -1}}
	go o.run(ctx)
	return ch
}

// observer feeds one Observe channel.
type observer struct {
	e    *Election
	ch   chan Leader
	last Leader // last sent; Term -1 before the first
}

func (o *observer) run(ctx context.Context) {
	defer close(o.ch)
	pause := time.Duration(0)
	for ctx.Err() == nil {
		err := o.step(ctx)
		switch {
		case err == nil:
			pause = 0
			continue
		case errors.Is(err, dlock.ErrClosed), ctx.Err() != nil:
			return
		}
		// Redis failed: try again later, a little longer each time.
		pause = min(max(2*pause, 10*time.Millisecond), o.e.cfg.ttl)
		if !sleep(ctx, pause) {
			return
		}
	}
}

// step sends the current leader if it changed, then waits for the next
// change of the seat.
func (o *observer) step(ctx context.Context) error {
	info, err := o.e.locker.Inspect(ctx, o.e.name)
	if err != nil {
		return err
	}
	switch {
	case info.Held && info.Fence == 0:
		// A candidate that won, but whose term is not handed out yet (on
		// a Redlock, not on a quorum yet), or a holder that is no
		// candidate: look again shortly.
		if !sleep(ctx, min(o.e.cfg.ttl/10+time.Millisecond, 100*time.Millisecond)) {
			return ctx.Err()
		}
		return nil
	case info.Held:
		o.send(leaderOf(info))
		return door.WaitReleaseOf(ctx, o.e.locker, o.e.name, info.Fingerprint)
	}
	o.send(Leader{})
	return o.waitForLeader(ctx)
}

// waitForLeader waits until a leader may have taken the empty seat. It
// holds the vacancy lock, unless another observer does, and waits for its
// release: the next leader deletes it (Campaign's announce). The seat is
// looked at once more between the two, as a leader may have come before
// the vacancy lock was held.
func (o *observer) waitForLeader(ctx context.Context) error {
	held, err := o.e.locker.TryObtain(ctx, o.e.vacancy(), o.e.cfg.ttl, dlock.AsRecord())
	if err != nil && !errors.Is(err, dlock.ErrNotObtained) {
		return err
	}
	info, err := o.e.locker.Inspect(ctx, o.e.name)
	if err != nil {
		return err
	}
	if info.Held {
		if held != nil {
			// Others may wait for this hold: let them look too.
			_ = held.Release(ctx)
		}
		return nil
	}
	return o.e.locker.WaitRelease(ctx, o.e.vacancy())
}

// send makes l the value waiting in the channel, in place of any older one
// the reader has not taken yet, unless l is what was sent last.
func (o *observer) send(l Leader) {
	if l == o.last {
		return
	}
	if o.last.Term != -1 && o.e.obs != nil {
		o.e.observe(observe.OpLeaderChange, "")
	}
	o.last = l
	select {
	case <-o.ch: // the reader did not take it: l replaces it
	default:
	}
	o.ch <- l // cannot block: only this goroutine sends, and the buffer is empty
}

// sleep waits for d, and reports false if ctx ended first.
func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}
