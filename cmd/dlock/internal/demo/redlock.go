package demo

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/dlock-go/dlock"
	"github.com/redis/go-redis/v9"
)

// A lock on a Redlock quorum of five independent nodes: it is held while a
// majority of them, three, hold it. Two nodes die while A holds the lock:
// it goes on being renewed on the three left, and B cannot take it. A third
// dies: no majority can renew the lock any more, so A is told it is lost
// (Lock.Done), and B's attempt fails with a QuorumError that says how the
// nodes voted; nobody holds a lock that a majority does not.
//
// The case needs five servers that it can kill, so it always runs on five
// embedded ones of its own, even when --redis names a server.
const (
	redlockNodes       = 5
	redlockTTL         = 500 * time.Millisecond
	redlockHold        = 3 * redlockTTL         // how long A holds the lock with two nodes down
	redlockProbe       = 50 * time.Millisecond  // how often B tries to take it meanwhile
	redlockNodeTimeout = 150 * time.Millisecond // a slow node on a busy machine is not a dead one
	redlockLostSlack   = 500 * time.Millisecond // how late A may hear of the loss, past a ttl
)

// quorumNodes are the embedded nodes of the case and a client of each.
type quorumNodes struct {
	servers []*Embedded
	rdbs    []*redis.Client
}

func startQuorumNodes(n int) (*quorumNodes, error) {
	q := &quorumNodes{}
	for range n {
		e, err := StartEmbedded()
		if err != nil {
			q.close()
			return nil, err
		}
		// No retry of a failed command or dial: the quorum bears a node's
		// failure, as dlock's commands set up the nodes of a quorum.
		opts := &redis.Options{Addr: e.Addr(), MaxRetries: -1, DialerRetries: 1}
		q.servers, q.rdbs = append(q.servers, e), append(q.rdbs, redis.NewClient(opts))
	}
	return q, nil
}

// kill stops node i, as a crash would, and closes its client, which from
// then on fails every call at once. (Left open, the client would fail
// dialing, and go-redis would start a goroutine that probes the dead
// address every second, and outlives the client's Close by up to a
// second.)
func (q *quorumNodes) kill(i int) {
	q.servers[i].Close()
	q.rdbs[i].Close()
}

// close closes the clients, then stops the servers (closing a killed one
// again does nothing).
func (q *quorumNodes) close() {
	for _, rdb := range q.rdbs {
		rdb.Close()
	}
	for _, e := range q.servers {
		e.Close()
	}
}

// locker returns a dlock Client on the Redlock quorum of the nodes, each of
// which gets nodeTimeout to answer in a round.
func (q *quorumNodes) locker(nodeTimeout time.Duration) (*dlock.Client, error) {
	nodes := make([]redis.UniversalClient, len(q.rdbs))
	for i, rdb := range q.rdbs {
		nodes[i] = rdb
	}
	return dlock.NewRedlock(nodes, dlock.WithNodeTimeout(nodeTimeout))
}

// quorumProbe is worker B trying to take the lock while A holds it.
type quorumProbe struct {
	tries, got int
	err        error
}

// refused reports whether an attempt of B found the lock held by A. With
// two of five nodes down, the three left answer "held": anything else (a
// QuorumError, say) breaks the story.
func refused(err error) bool {
	return errors.Is(err, dlock.ErrNotObtained)
}

func redlockQuorum(ctx context.Context, d *env) result {
	key := d.key("redlock:job")
	nodes, err := startQuorumNodes(redlockNodes)
	if err != nil {
		return failed(err)
	}
	defer nodes.close()
	locker, err := nodes.locker(redlockNodeTimeout)
	if err != nil {
		return failed(err)
	}
	defer locker.Close() // before nodes.close

	a, err := locker.TryObtain(ctx, key, redlockTTL, dlock.WithAutoRenew(true))
	if err != nil {
		return failed(fmt.Errorf("worker A could not take the lock on %d nodes: %w", redlockNodes, err))
	}
	nodes.kill(0)
	nodes.kill(1)
	b := probeQuorum(ctx, locker, key, redlockHold)
	if b.err != nil {
		return failed(b.err)
	}
	aTTL, aErr := a.TTL(ctx) // still A's on the three left, past its first ttl: renewed there

	nodes.kill(2)
	third := time.Now()
	lostAfter := time.Duration(-1) // not told
	select {
	case <-a.Done():
		lostAfter = time.Since(third)
	case <-time.After(redlockTTL + redlockLostSlack):
	}
	_, bErr := locker.TryObtain(ctx, key, redlockTTL)
	return redlockVerdict(b, aTTL, aErr, a.Err(), lostAfter, bErr)
}

// probeQuorum is worker B: it tries to take the lock every redlockProbe for
// d, and releases it if it got it (which must not happen).
func probeQuorum(ctx context.Context, locker *dlock.Client, key string, d time.Duration) (b quorumProbe) {
	ticker := time.NewTicker(redlockProbe)
	defer ticker.Stop()
	stop := time.After(d)
	for {
		select {
		case <-stop:
			return b
		case <-ctx.Done():
			b.err = context.Cause(ctx)
			return b
		case <-ticker.C:
		}
		b.tries++
		lock, err := locker.TryObtain(ctx, key, redlockTTL)
		switch {
		case refused(err):
		case err != nil:
			b.err = fmt.Errorf("worker B's attempt with two nodes down: %w", err)
			return b
		default:
			b.got++
			_ = lock.Release(ctx)
		}
	}
}

// redlockVerdict checks what happened: with two nodes down A kept its lock,
// renewed, and B never got it; with three down A was told it is lost within
// about a ttl, and B's attempt failed with a QuorumError.
func redlockVerdict(b quorumProbe, aTTL time.Duration, aErr, lost error, lostAfter time.Duration, bErr error) result {
	var problems []string
	if aErr != nil || aTTL <= 0 {
		problems = append(problems, fmt.Sprintf("with 2 nodes down A's lock was not held on a quorum after %v: ttl %v, %v", redlockHold, aTTL, aErr))
	}
	if b.got > 0 {
		problems = append(problems, fmt.Sprintf("B took the lock %d times while A held it", b.got))
	}
	if lostAfter < 0 || !errors.Is(lost, dlock.ErrLockLost) {
		problems = append(problems, fmt.Sprintf("with 3 nodes down A was not told within %v that its lock is lost: %v", redlockTTL+redlockLostSlack, lost))
	}
	var qe *dlock.QuorumError
	bOutcome := fmt.Sprintf("B's attempt: %v", bErr)
	if errors.As(bErr, &qe) {
		bOutcome = "B's attempt: " + strings.Replace(voted(qe), "; ", ";\n", 1)
	} else {
		problems = append(problems, fmt.Sprintf("B's attempt with 3 nodes down returned %v, want a QuorumError", bErr))
	}
	happened := fmt.Sprintf("A's lock on 5 embedded nodes; 2 die: renewed\non the 3 left for %v, B tried %d times: %s;\na 3rd dies: A told the lock is lost %v later;\n%s",
		redlockHold, b.tries, b.outcome(), lostAfter.Round(time.Millisecond), bOutcome)
	return verdict(happened, "held by a quorum, lost without one", problems)
}

func (b quorumProbe) outcome() string {
	if b.got == 0 {
		return "never got in"
	}
	return fmt.Sprintf("got in %d times", b.got)
}

// voted returns how the nodes voted, as a QuorumError says it: its message
// without the operation and key before, nor the nodes' errors after.
func voted(qe *dlock.QuorumError) string {
	summary := *qe
	summary.Errs = nil
	_, votes, found := strings.Cut(summary.Error(), " on a Redlock quorum: ")
	if !found {
		return errText(qe)
	}
	return votes
}
