package engine

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/dlock-go/dlock/redistest"
)

// TestQuorumLost checks why an acquire without a quorum of 5 failed, with
// the nodes still to answer taken into account: the round waits for them
// only while they could change the answer.
func TestQuorumLost(t *testing.T) {
	var (
		y = vote{R: reply{code: acquired}, Answered: true}
		h = vote{R: reply{code: held}, Answered: true}
		e = vote{Err: errors.New("connection refused"), Answered: true}
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

// The SET NX GET of a Redlock node finds a key that holds its own token
// (go-redis resent the command after a lost reply) and takes it as its own.
func TestFencelessAcquireResent(t *testing.T) {
	t.Parallel()
	rdb := redistest.NewServer(t).Client()
	n := newNode(rdb, ReplicaAck{}, quorumBatchLanes, nil)
	n.fenceless = true
	token := newToken()
	a := attempt{kind: KindLock, keys: lockKeys("test:resent"), token: token, arg: token, ttl: time.Minute}
	o := a.op()
	for i := range 2 {
		r, err := n.run(context.Background(), o)
		if err != nil || r.code != acquired {
			t.Fatalf("acquire %d = %+v, %v; want acquired", i+1, r, err)
		}
	}
	other := a
	other.newToken(Config{})
	r, err := n.run(context.Background(), other.op())
	if err != nil || r.code != held || r.value != unknownTTL {
		t.Errorf("acquire by another = %+v, %v; want held, PTTL unknown", r, err)
	}
}

// refusePExpireGT answers PEXPIRE ... GT as Redis before 7.0 does.
type refusePExpireGT struct{}

func (refusePExpireGT) DialHook(next redis.DialHook) redis.DialHook          { return next }
func (refusePExpireGT) ProcessHook(next redis.ProcessHook) redis.ProcessHook { return next }
func (refusePExpireGT) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		err := next(ctx, cmds)
		for _, cmd := range cmds {
			if cmd.Name() == "pexpire" {
				cmd.SetErr(errors.New("ERR Unsupported option GT"))
				err = cmd.Err()
			}
		}
		return err
	}
}

// The upkeep of the side key does not decide an acquire: on a Redis that
// refuses PEXPIRE GT (before 7.0) the lock is still taken, and found by
// Scan through the side key SET NX created.
func TestFencelessAcquireWithoutPExpireGT(t *testing.T) {
	t.Parallel()
	rdb := redistest.NewServer(t).Client()
	rdb.AddHook(refusePExpireGT{})
	n := newNode(rdb, ReplicaAck{}, quorumBatchLanes, nil)
	n.fenceless = true
	token := newToken()
	o := attempt{kind: KindLock, keys: lockKeys("test:nogt"), token: token, arg: token, ttl: time.Minute}.op()
	r, err := n.run(context.Background(), o)
	if err != nil || r.code != acquired {
		t.Fatalf("acquire = %+v, %v; want acquired", r, err)
	}
	if pttl := rdb.PTTL(context.Background(), o.keys[1]).Val(); pttl <= 0 {
		t.Errorf("side key PTTL = %v, want it set with the lock", pttl)
	}
}

// An operation that a node or a quorum does not know is an error, never
// another operation (such as a force release).
func TestUnknownOperationIsAnError(t *testing.T) {
	t.Parallel()
	rdb := redistest.NewServer(t).Client()
	ctx := context.Background()
	keys := queueKeys("unknown:op")
	if err := rdb.Set(ctx, keys[0], "holder", time.Minute).Err(); err != nil {
		t.Fatal(err)
	}
	n := newNode(rdb, ReplicaAck{}, quorumBatchLanes, nil)
	if _, err := n.run(ctx, op{name: "unknown", keys: keys}); err == nil {
		t.Error("a node ran an unknown operation")
	}
	c := newTestQuorum([]redis.UniversalClient{rdb}, 100*time.Millisecond)
	defer c.Close()
	leave := attempt{kind: KindLock, keys: lockKeys("unknown:op"), token: "x", arg: "x", ttl: time.Second, lease: time.Second}.undo(false)
	if _, err := c.quorum.run(ctx, leave); err == nil {
		t.Error("a quorum ran a leave")
	}
	if v := rdb.Get(ctx, keys[0]).Val(); v != "holder" {
		t.Errorf("the lock holds %q after unknown operations, want it untouched", v)
	}
}
