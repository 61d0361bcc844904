// Package demo holds the cases of dlock demo: the classic cases of
// distributed locking (a cron job on two hosts, a double-clicked pay
// button, a flash sale, a lock that expires under a slow holder...), each
// played by goroutines standing in for service instances on one Redis, and
// the check of each one's invariant. It holds, too, the embedded Redis that
// the demo runs on when no server is named.
package demo

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"strings"
	"time"

	"github.com/dlock-go/dlock"
	"github.com/redis/go-redis/v9"
)

// Run runs every case on rdb, one after the other, prints on stdout the
// table of what happened, a row as each case ends, and reports whether every
// invariant held. When one broke, or a case could not run, it says which,
// and why, on stderr. Its keys start with "dlock-demo:" and a random run id,
// and are deleted at the end or expire within seconds.
func Run(ctx context.Context, rdb *redis.Client, stdout, stderr io.Writer) bool {
	locker := dlock.New(rdb)
	defer locker.Close()
	d := &env{rdb: rdb, locker: locker, prefix: fmt.Sprintf("dlock-demo:%08x:", rand.Uint32())}
	return d.runAll(ctx, scenarios(), stdout, stderr)
}

// runAll runs the cases, prints each one's row of the table as it ends,
// and reports whether every invariant held and every case ran.
func (d *env) runAll(ctx context.Context, cases []scenario, stdout, stderr io.Writer) bool {
	start := time.Now()
	t := newTable(stdout, cases)
	var broken []string
	var errs []error
	for _, c := range cases {
		r := c.run(ctx, d)
		t.row(c, r)
		name := strings.TrimSpace(c.name)
		if r.err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", name, r.err))
		}
		if !r.ok || r.err != nil {
			broken = append(broken, name)
		}
	}
	elapsed := time.Since(start).Round(time.Millisecond)
	if len(broken) == 0 {
		fmt.Fprintf(stdout, "all invariants hold (%v)\n", elapsed)
		return true
	}
	for _, err := range errs {
		fmt.Fprintf(stderr, "dlock demo: %v\n", err)
	}
	fmt.Fprintf(stderr, "dlock demo: broken or failed: %s (%v)\n", strings.Join(broken, ", "), elapsed)
	return false
}
