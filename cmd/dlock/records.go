package main

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"github.com/dlock-go/dlock"
)

// The packages around dlock keep records in keys that look like locks to
// Scan and Inspect: jobs' done records are locks held for a day, an
// election's vacancy is a lock its watchers hold. list hides them unless
// --all, and release deletes them only with --record, saying what that
// undoes. A key's role is read from its name, in the formats of jobs,
// election, idempotency and cachefill.

// A keyRole says what a key is for, when a package made it.
type keyRole struct {
	what   string // what the key is, as in `the done record of job "x" in slot ...`; "" for a plain lock
	undo   string // what deleting it does, for release
	record bool   // a record kept by a package, not a lock anybody holds to work
}

// The names of the packages' keys: jobs' "dlock:job:NAME@SLOT/KIND[/N]",
// election's "dlock:vacancy:NAME", idempotency's "PREFIX{DIGEST}:lock" and
// ":result", cachefill's "PREFIX{KEY}:lock" and ":claim".
const (
	jobPrefix     = "dlock:job:"
	vacancyPrefix = "dlock:vacancy:"
)

var idempotencyKey = regexp.MustCompile(`\{[0-9a-f]{32}\}:(lock|result)$`)

// roleOf returns the role of key, by its name.
func roleOf(key string) keyRole {
	switch {
	case strings.HasPrefix(key, jobPrefix):
		if role, ok := jobRole(key[len(jobPrefix):]); ok {
			return role
		}
	case strings.HasPrefix(key, vacancyPrefix):
		return keyRole{
			what: fmt.Sprintf("the vacancy of election %q (package election): held by those that watch its empty seat (dlock leader --watch)",
				key[len(vacancyPrefix):]),
			undo:   "the watchers wake up, look at the seat again, and one of them takes the vacancy back",
			record: true,
		}
	}
	if m := idempotencyKey.FindStringSubmatch(key); m != nil {
		if m[1] == "lock" {
			return keyRole{
				what: "the lock of an idempotent call that runs now (package idempotency)",
				undo: "a retry of the request with this Idempotency-Key may run it a second time, beside this run",
			}
		}
		return keyRole{
			what:   "the stored outcome of an idempotent call (package idempotency)",
			undo:   "the next request with this Idempotency-Key runs again, instead of getting the stored response",
			record: true,
		}
	}
	if base, ok := strings.CutSuffix(key, ":claim"); ok && strings.Contains(base, "{") {
		return keyRole{
			what:   "the claim of a cache fill (package cachefill): the caller that missed first",
			undo:   "the callers that wait for this fill elect another loader",
			record: true,
		}
	}
	if base, ok := strings.CutSuffix(key, ":lock"); ok && strings.Contains(base, "{") && strings.HasSuffix(base, "}") {
		return keyRole{
			what: "the lock of a cache entry's loader (package cachefill)",
			undo: "another caller may load the entry beside the loader that runs",
		}
	}
	return keyRole{}
}

// jobRole is roleOf a key of package jobs, given without its prefix:
// NAME@SLOT/KIND, and for attempts and failures /N after it.
func jobRole(rest string) (keyRole, bool) {
	attempt := 0
	if i := strings.LastIndexByte(rest, '/'); i >= 0 {
		if n, err := strconv.Atoi(rest[i+1:]); err == nil && n > 0 {
			attempt, rest = n, rest[:i]
		}
	}
	i := strings.LastIndexByte(rest, '/')
	if i < 0 {
		return keyRole{}, false
	}
	kind := rest[i+1:]
	at := strings.LastIndexByte(rest[:i], '@')
	if at < 0 {
		return keyRole{}, false
	}
	job, slot := strconv.Quote(rest[:at]), rest[at+1:i]
	switch {
	case kind == "done" && attempt == 0:
		return keyRole{
			what:   fmt.Sprintf("the done record of job %s in slot %s (package jobs, dlock run --once-per)", job, slot),
			undo:   "the job will run again in its slot, on the next host whose schedule fires in it",
			record: true,
		}, true
	case kind == "run" && attempt == 0:
		return keyRole{
			what: fmt.Sprintf("the lease of job %s's attempt that runs now in slot %s (package jobs)", job, slot),
			undo: "another host may begin the job's slot beside the run that holds it, if that is still running",
		}, true
	case kind == "attempt" && attempt > 0:
		return keyRole{
			what:   fmt.Sprintf("the record of attempt %d of job %s in slot %s (package jobs)", attempt, job, slot),
			undo:   "the attempt is forgotten: it no longer counts against the slot's attempts, and jobs history no longer shows it",
			record: true,
		}, true
	case kind == "failed" && attempt > 0:
		return keyRole{
			what:   fmt.Sprintf("the record that attempt %d of job %s failed in slot %s (package jobs)", attempt, job, slot),
			undo:   "the failure is forgotten: jobs history no longer shows it",
			record: true,
		}, true
	}
	return keyRole{}, false
}

// takenByDlock reports whether a held lock carries what dlock puts in the
// locks it takes: the time it was taken, a fence, or a holder name. A
// string key without any is a value, a record of another program, or a
// lock another client took with a plain SET NX (or a dlock Client without
// a holder name on a Redlock quorum, whose fences come later).
func takenByDlock(info dlock.LockInfo) bool {
	return info.Kind != "lock" || !info.Since.IsZero() || info.Fence != 0 || info.HolderName != ""
}
