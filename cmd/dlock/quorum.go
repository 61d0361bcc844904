package main

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/dlock-go/dlock"
	"github.com/redis/go-redis/v9"
)

// The verbs on a Redlock quorum, named by several --redis URLs: the first
// contact with its nodes, which goes on when a majority of them answer, a
// dlock Client on them, and what the verbs do on each node where the
// Client's own calls would stop at the first node that fails.

// quorum is how many of n nodes a Redlock quorum needs, as dlock.NewRedlock
// counts them.
func quorum(n int) int { return n/2 + 1 }

// A nodeDown is a node of a Redlock quorum that did not answer at the
// start.
type nodeDown struct {
	node    int    // its place among the URLs
	problem string // what went wrong, fit to print
}

// connectAll connects to srvs at once, as connect does to one, and returns
// a client of each, in their order; the caller closes them. One server must
// answer. Of the nodes of a Redlock quorum, a quorum must, and the others
// get a client all the same, since they may come back: down says what went
// wrong with each of them.
func connectAll(ctx context.Context, srvs []redisServer, timeout time.Duration) (rdbs []*redis.Client, down []nodeDown, err error) {
	if len(srvs) == 1 {
		rdb, err := connect(ctx, srvs[0], timeout)
		if err != nil {
			return nil, nil, err
		}
		return []*redis.Client{rdb}, nil, nil
	}
	rdbs = make([]*redis.Client, len(srvs))
	errs := make([]error, len(srvs))
	var wg sync.WaitGroup
	for i, srv := range srvs {
		quorumNode(srv.opts)
		wg.Go(func() { rdbs[i], errs[i] = ping(ctx, srv, timeout) })
	}
	wg.Wait()
	var problems, advice []string
	for i, err := range errs {
		if err == nil {
			continue
		}
		problem, todo := srvs[i].pingProblem(err)
		problems = append(problems, problem)
		down = append(down, nodeDown{i, problem})
		if todo != "" && !slices.Contains(advice, todo) {
			advice = append(advice, todo)
		}
		rdbs[i] = redis.NewClient(srvs[i].opts) // with the DialTimeout that ping set
	}
	if answered := len(srvs) - len(down); answered < quorum(len(srvs)) {
		closeAll(rdbs)
		msg := fmt.Sprintf("dlock: only %d of the %d Redis nodes answered, and a Redlock quorum needs %d:\n  %s",
			answered, len(srvs), quorum(len(srvs)), strings.Join(problems, "\n  "))
		if len(advice) > 0 {
			msg += "\ndlock: " + strings.Join(advice, "; ")
		}
		return nil, nil, errors.New(msg)
	}
	return rdbs, down, nil
}

// quorumNode sets the options of the client of a node of a Redlock quorum
// that its URL left unset: a node that is down fails at once, with one dial
// and no retry. The quorum is what bears a node's failure, and the next
// round (the next renewal, the next attempt) asks every node again;
// meanwhile each call to a dead node would go on retrying in the
// background, and dlock would wait for it before it exits.
func quorumNode(opts *redis.Options) {
	if opts.MaxRetries == 0 {
		opts.MaxRetries = -1
	}
	if opts.DialerRetries == 0 {
		opts.DialerRetries = 1
	}
}

// downWarning is the warning about a node of a quorum that did not answer
// at the start.
func downWarning(d nodeDown, nodes, down int) string {
	return fmt.Sprintf("warning: %s; going on with the %d of %d nodes that answered (a quorum needs %d)",
		d.problem, nodes-down, nodes, quorum(nodes))
}

// newLocker returns a dlock Client on rdbs: on the one server, or on the
// Redlock quorum of several, each of which gets nodeTimeout to answer in a
// round.
func newLocker(rdbs []*redis.Client, nodeTimeout time.Duration, opts ...dlock.Option) (*dlock.Client, error) {
	if len(rdbs) == 1 {
		return dlock.New(rdbs[0], opts...), nil
	}
	nodes := make([]redis.UniversalClient, len(rdbs))
	for i, rdb := range rdbs {
		nodes[i] = rdb
	}
	return dlock.NewRedlock(nodes, append(opts, dlock.WithNodeTimeout(nodeTimeout))...)
}

// where says where the locks of srvs live, for messages: the one server's
// URL, or the quorum.
func where(srvs []redisServer) string {
	if len(srvs) == 1 {
		return srvs[0].shown
	}
	return fmt.Sprintf("a Redlock quorum of %d nodes", len(srvs))
}

// scanLocks returns the locks held now whose keys match pattern. On a
// Redlock quorum it scans each node on its own, and asks the quorum about
// each key found there: a lock held on a quorum of nodes is on one at least
// of any quorum of nodes, so it is found while a quorum can be scanned,
// whichever nodes are down. (The library's Scan of a Redlock stops at the
// first node that fails.)
func scanLocks(ctx context.Context, t target, pattern string) ([]dlock.LockInfo, error) {
	var locks []dlock.LockInfo
	if len(t.nodes) == 1 {
		for info, err := range t.locker.Scan(ctx, pattern) {
			if err != nil {
				return nil, err
			}
			locks = append(locks, info)
		}
		return locks, nil
	}
	var keys []string // in the order found
	seen := map[string]bool{}
	var failed []string
	for _, rdb := range t.nodes {
		node := dlock.New(rdb)
		for info, err := range node.Scan(ctx, pattern) {
			if err != nil {
				failed = append(failed, errText(err))
				break
			}
			if !seen[info.Key] {
				seen[info.Key] = true
				keys = append(keys, info.Key)
			}
		}
		node.Close()
	}
	if scanned, need := len(t.nodes)-len(failed), quorum(len(t.nodes)); scanned < need {
		return nil, fmt.Errorf("dlock: scan %q on a Redlock quorum: %d of %d nodes scanned, %d needed: %s",
			pattern, scanned, len(t.nodes), need, strings.Join(failed, "; "))
	}
	for _, key := range keys {
		info, err := t.locker.Inspect(ctx, key)
		if err != nil {
			return nil, err
		}
		if info.Held {
			locks = append(locks, info)
		}
	}
	return locks, nil
}

// checkTarget returns the warnings of CheckDeployment about the server, or
// about each node of a Redlock quorum, and a warning for each node of a
// quorum that cannot be reached, since each one down brings the quorum
// closer to having no lock at all.
func checkTarget(ctx context.Context, t target) ([]string, error) {
	if len(t.nodes) == 1 {
		return t.locker.CheckDeployment(ctx)
	}
	n, need := len(t.nodes), quorum(len(t.nodes))
	var warnings []string
	wasDown := map[int]bool{}
	for _, d := range t.down {
		wasDown[d.node] = true
		warnings = append(warnings, fmt.Sprintf("%s: a Redlock quorum of %d nodes needs %d of them, and %d answered",
			d.problem, n, need, n-len(t.down)))
	}
	for i, rdb := range t.nodes {
		if wasDown[i] {
			continue
		}
		// The Client of the quorum would stop at the first node that fails.
		node := dlock.New(rdb)
		found, err := node.CheckDeployment(ctx)
		node.Close()
		if err != nil {
			found = append(found, fmt.Sprintf("%s: a Redlock quorum of %d nodes needs %d of them", errText(err), n, need))
		}
		warnings = append(warnings, found...)
	}
	return warnings, nil
}
