package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/dlock-go/dlock"
	"github.com/dlock-go/dlock/cmd/dlock/internal/top"
	"github.com/redis/go-redis/v9"
)

// lockJSON is the --json form of one lock, for scripts.
type lockJSON struct {
	Key       string `json:"key"`
	Held      bool   `json:"held"`
	TTLMillis int64  `json:"ttl_ms"`                // -1: no expiry; 0 when not held
	Fence     int64  `json:"fence,omitempty"`       // the last fence handed out, if known
	Holder    string `json:"holder,omitempty"`      // the fingerprint of the holder's token (dlock.LockInfo)
	Name      string `json:"holder_name,omitempty"` // the holder's name (dlock.WithHolderName)
	Since     string `json:"since,omitempty"`       // when the holder obtained it, RFC 3339, by the server's clock
	Waiters   int    `json:"waiters"`               // live waiters in the lock's queue (none on a Redlock quorum)
	Kind      string `json:"kind,omitempty"`        // "lock", "multi", "semaphore" or "rwmutex" when held
	Limit     int    `json:"limit,omitempty"`       // a semaphore's
	// Holders are a semaphore's or an RW lock's holders, one per permit or hold
	Holders []holderJSON `json:"holders,omitempty"`
	// What says what a package's key is for (list): "" for a plain lock
	What string `json:"what,omitempty"`
	// Record is true for a package's record rather than a lock (list --all)
	Record bool `json:"record,omitempty"`
	// Keys are all of the keys of a "multi" holding, this one among them
	// (dlock.Client.ObtainMulti, dlock run --key ... --key)
	Keys []string `json:"keys,omitempty"`
}

// holderJSON is one holder of a semaphore or an RW lock.
type holderJSON struct {
	Mode      string `json:"mode"` // "permit", "read" or "write"
	Holder    string `json:"holder"`
	Name      string `json:"holder_name,omitempty"`
	TTLMillis int64  `json:"ttl_ms"`
	Fence     int64  `json:"fence,omitempty"`
}

func toJSON(info dlock.LockInfo) lockJSON {
	j := lockJSON{
		Key:       info.Key,
		Held:      info.Held,
		TTLMillis: info.TTL.Milliseconds(),
		Fence:     info.Fence,
		Holder:    info.Fingerprint,
		Waiters:   info.Waiters,
		Kind:      info.Kind,
		Limit:     info.Limit,
		Name:      info.HolderName,
		Keys:      info.Keys,
	}
	if !info.Since.IsZero() {
		j.Since = info.Since.UTC().Format(time.RFC3339Nano)
	}
	for _, h := range info.Holders {
		j.Holders = append(j.Holders, holderJSON{Mode: h.Mode, Holder: h.Fingerprint, Name: h.HolderName, TTLMillis: h.TTL.Milliseconds(), Fence: h.Fence})
	}
	return j
}

// heldBy says in a line who holds a lock, since when, its fence and its
// waiters: "held by host-b pid 4121 (report) for 3m12s, fence 17, 2 waiters".
func heldBy(info dlock.LockInfo, now time.Time) string {
	var b strings.Builder
	b.WriteString("held by ")
	switch {
	case info.Holders != nil && info.Kind == "semaphore":
		fmt.Fprintf(&b, "%d of %d permit holders", len(info.Holders), info.Limit)
	case info.Holders != nil && (len(info.Holders) != 1 || info.Holders[0].Mode != "write"):
		fmt.Fprintf(&b, "%d readers", len(info.Holders))
	default:
		b.WriteString(top.HolderName(info.HolderName, info.Fingerprint))
	}
	if !info.Since.IsZero() {
		fmt.Fprintf(&b, " for %s", now.Sub(info.Since).Round(time.Second))
	}
	if info.Fence != 0 {
		fmt.Fprintf(&b, ", fence %d", info.Fence)
	}
	if info.Waiters > 0 {
		fmt.Fprintf(&b, ", %d waiters", info.Waiters)
	}
	return b.String()
}

// showHolder says who holds a lock: its holder's fingerprint, or how many
// hold a semaphore or an RW lock.
func showHolder(info dlock.LockInfo) string {
	if info.Holders == nil {
		return info.Fingerprint // the line that status shows as "holder:"; list adds the name
	}
	switch {
	case info.Kind == "semaphore":
		return fmt.Sprintf("%d of %d permits", len(info.Holders), info.Limit)
	case len(info.Holders) == 1 && info.Holders[0].Mode == "write":
		return "writer " + top.HolderName(info.Holders[0].HolderName, info.Holders[0].Fingerprint)
	}
	return fmt.Sprintf("%d readers", len(info.Holders))
}

func showTTL(ttl time.Duration) string {
	if ttl < 0 {
		return "no expiry"
	}
	return ttl.Round(time.Millisecond).String()
}

// showFence shows a fence for a person: the number, and the time it
// stands for (see withTime); "unknown" for 0.
func showFence(fence int64) string {
	if fence == 0 {
		return "none yet" // the holder has not asked for one, or it is not known
	}
	return withTime(fence)
}

// withTime shows a fence or an election's term, as in
// "1795728702495975 (2026-11-26 22:51:42 UTC)": a fence is at least the
// server's time in microseconds when its holder obtained the lock, and
// nearly always that time, so the time says when. A number that stands for
// no time of this era (a fence of another scheme) is shown alone.
func withTime(fence int64) string {
	text := strconv.FormatInt(fence, 10)
	if t := time.UnixMicro(fence).UTC(); fence > 0 && t.Year() >= 2000 && t.Year() < 2200 {
		text += " (" + t.Format("2006-01-02 15:04:05 MST") + ")"
	}
	return text
}

// printStatus writes what dlock status shows of one lock.
func printStatus(w io.Writer, info dlock.LockInfo, asJSON bool) error {
	role := roleOf(info.Key)
	if asJSON {
		j := toJSON(info)
		j.What, j.Record = role.what, role.record
		return json.NewEncoder(w).Encode(j)
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "key:\t%q\n", info.Key)
	if role.what != "" {
		fmt.Fprintf(tw, "what:\t%s\n", role.what)
	}
	if !info.Held {
		fmt.Fprintf(tw, "held:\tno\n")
		if info.Fence != 0 {
			fmt.Fprintf(tw, "last fence:\t%s\n", withTime(info.Fence))
		}
		if info.Waiters > 0 { // free for a moment: the first waiter is about to take it
			fmt.Fprintf(tw, "waiters:\t%d\n", info.Waiters)
		}
		return tw.Flush()
	}
	fmt.Fprintf(tw, "held:\tyes\n")
	fmt.Fprintf(tw, "summary:\t%s\n", heldBy(info, time.Now()))
	fmt.Fprintf(tw, "kind:\t%s\n", info.Kind)
	if info.Kind == "multi" {
		quoted := make([]string, len(info.Keys))
		for i, key := range info.Keys {
			quoted[i] = strconv.Quote(key)
		}
		fmt.Fprintf(tw, "keys:\t%s, held as one lock, each with this holder and fence\n", strings.Join(quoted, " "))
	}
	if info.Kind == "semaphore" {
		fmt.Fprintf(tw, "limit:\t%d\n", info.Limit)
	}
	fmt.Fprintf(tw, "ttl:\t%s\n", showTTL(info.TTL))
	fmt.Fprintf(tw, "fence:\t%s\n", showFence(info.Fence))
	fmt.Fprintf(tw, "holder:\t%s\n", showHolder(info))
	if info.HolderName != "" && info.Holders == nil {
		fmt.Fprintf(tw, "holder name:\t%s\n", info.HolderName)
	}
	for _, h := range info.Holders {
		fmt.Fprintf(tw, "  %s:\t%s, ttl %s, fence %s\n", h.Mode, top.HolderName(h.HolderName, h.Fingerprint), showTTL(h.TTL), showFence(h.Fence))
	}
	if info.Waiters > 0 { // a lock nobody waits for has none to show
		fmt.Fprintf(tw, "waiters:\t%d\n", info.Waiters)
	}
	return tw.Flush()
}

// listLocks writes the locks that match pattern, as a table or a JSON
// array. The records of packages (roleOf) are left out unless all.
func listLocks(ctx context.Context, w io.Writer, t target, pattern string, all, asJSON bool) error {
	found, err := scanLocks(ctx, t, pattern)
	if err != nil {
		return err
	}
	var locks []dlock.LockInfo
	hidden := 0
	for _, info := range found {
		if roleOf(info.Key).record && !all {
			hidden++
			continue
		}
		locks = append(locks, info)
	}
	if asJSON {
		out := make([]lockJSON, 0, len(locks))
		for _, info := range locks {
			j := toJSON(info)
			role := roleOf(info.Key)
			j.What, j.Record = role.what, role.record
			out = append(out, j)
		}
		return json.NewEncoder(w).Encode(out)
	}
	if len(locks) == 0 {
		_, err = fmt.Fprintf(w, "no locks match %q\n", pattern)
	} else {
		err = printLocks(w, locks)
	}
	if err == nil && hidden > 0 {
		records := "records of packages"
		if hidden == 1 {
			records = "record of a package"
		}
		_, err = fmt.Fprintf(w, "(%d %s not shown, such as jobs' done records and elections' vacancies: dlock list --all shows them)\n", hidden, records)
	}
	return err
}

// multiHoldings returns the keys of each multi-key holding among locks (of
// Kind "multi"), by the Fingerprint of its holder, which every one of its
// keys shows, in the order of locks.
func multiHoldings(locks []dlock.LockInfo) map[string][]string {
	holdings := map[string][]string{}
	for _, info := range locks {
		if info.Kind == "multi" {
			holdings[info.Fingerprint] = append(holdings[info.Fingerprint], info.Key)
		}
	}
	return holdings
}

// printLocks writes locks as a table, with what a package's key is for
// after it. The keys of one multi-key holding share one line, at the place
// of the first.
func printLocks(w io.Writer, locks []dlock.LockInfo) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "KEY\tKIND\tTTL\tFENCE\tHOLDER\tWAITERS\tWHAT")
	holdings := multiHoldings(locks)
	for _, info := range locks {
		keys := fmt.Sprintf("%q", info.Key)
		if info.Kind == "multi" {
			held := holdings[info.Fingerprint]
			if held[0] != info.Key {
				continue // on the line of the first
			}
			quoted := make([]string, len(held))
			for i, key := range held {
				quoted[i] = strconv.Quote(key)
			}
			keys = strings.Join(quoted, " ")
		}
		holder := showHolder(info)
		if info.Holders == nil {
			holder = top.HolderName(info.HolderName, info.Fingerprint)
		}
		what := "-"
		if role := roleOf(info.Key); role.what != "" {
			what = role.what
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%d\t%s\n", keys, info.Kind, showTTL(info.TTL), showFence(info.Fence), holder, info.Waiters, what)
	}
	return tw.Flush()
}

// releaseRefusal is the error of a release that a flag must allow: the
// key is a package's record, or no lock taken by dlock.
type releaseRefusal struct{ msg string }

func (e *releaseRefusal) Error() string { return e.msg }

// releaseFlags are what release is told to delete besides a lock.
type releaseFlags struct {
	record   bool // a package's record (roleOf)
	notALock bool // a string dlock did not take as a lock (takenByDlock)
}

// forceRelease deletes a lock whoever holds it and says what it did. It
// deletes the holder it looked at, and never one that took the lock since.
// A package's record, or a string that dlock did not take as a lock, it
// refuses unless allow says so.
func forceRelease(ctx context.Context, w io.Writer, locker *dlock.Client, key string, allow releaseFlags, asJSON bool) error {
	info, err := locker.Inspect(ctx, key)
	if err != nil {
		return err
	}
	role := roleOf(key)
	switch {
	case !info.Held:
	case role.record && !allow.record:
		return &releaseRefusal{fmt.Sprintf("dlock release: %q is no lock: it is %s.\n"+
			"Deleting it means: %s. Add --record if that is what you want", key, role.what, role.undo)}
	case !role.record && !takenByDlock(info) && !allow.notALock:
		return &releaseRefusal{fmt.Sprintf("dlock release: %q holds a string that dlock did not take as a lock (no fence, no holder name):\n"+
			"a cached value, a record of another program, or a lock that another client took with SET NX.\n"+
			"Add --not-a-lock to delete it all the same", key)}
	}
	released := false
	if info.Held {
		if released, err = locker.ForceReleaseHolder(ctx, info); err != nil {
			return err
		}
	}
	if asJSON {
		return json.NewEncoder(w).Encode(struct {
			Key      string `json:"key"`
			Released bool   `json:"released"`
			Holder   string `json:"holder,omitempty"`
			What     string `json:"what,omitempty"`
		}{key, released, info.Fingerprint, role.what})
	}
	switch {
	case !info.Held:
		_, err = fmt.Fprintf(w, "%q was not held: nothing to release\n", key)
	case !released:
		_, err = fmt.Fprintf(w, "%q was held by %s, who let it go (or lost it) before it could be deleted; nothing deleted\n",
			key, top.HolderName(info.HolderName, info.Fingerprint))
	case role.record:
		_, err = fmt.Fprintf(w, "deleted %q, %s: %s\n", key, role.what, role.undo)
	default:
		_, err = fmt.Fprintf(w, "released %q, held by %s; its holder, if still running, is no longer protected\n",
			key, top.HolderName(info.HolderName, info.Fingerprint))
	}
	return err
}

// The verbs status, list, release and check share their flags: where
// Redis is, --json, and a time limit.
type inspectFlags struct {
	urls    redisURLs
	asJSON  bool
	timeout time.Duration
}

func (f *inspectFlags) register(fs *flag.FlagSet) {
	fs.Var(&f.urls, "redis", redisFlagUsage)
	fs.BoolVar(&f.asJSON, "json", false, "print JSON, for scripts")
	fs.DurationVar(&f.timeout, "timeout", 5*time.Second, "give up if Redis has not answered within this long")
}

// A target is what the verbs status, list, release and check act on: a
// Client on the server, or on the Redlock quorum, that the flags name, and
// a go-redis client of each node.
type target struct {
	locker *dlock.Client
	nodes  []*redis.Client
	down   []nodeDown // the nodes of a quorum that did not answer at the start
}

// do connects to the server or quorum the flags name, runs fn on it, all
// within the --timeout, and returns the exit status: errors are printed.
// A quorum is used when a quorum of its nodes answered; the others are
// warned about on stderr, unless fn does that itself (quiet).
func (f *inspectFlags) do(ctx context.Context, stderr io.Writer, quiet bool, fn func(context.Context, target) error) int {
	srvs, err := pickRedis(f.urls, os.Getenv)
	if err != nil {
		fmt.Fprintln(stderr, err)
		return exitUsage
	}
	ctx, cancel := context.WithTimeout(ctx, f.timeout)
	defer cancel()
	rdbs, down, err := connectAll(ctx, srvs, f.timeout)
	if err != nil {
		fmt.Fprintln(stderr, err)
		return exitUnavailable
	}
	return f.use(rdbs, down, quiet, stderr, func(t target) error { return fn(ctx, t) })
}

// use runs fn on a target made of rdbs, the nodes that answered, and returns
// the exit status: errors are printed. The nodes that did not answer (down)
// are warned about on stderr, unless quiet. use closes rdbs.
func (f *inspectFlags) use(rdbs []*redis.Client, down []nodeDown, quiet bool, stderr io.Writer, fn func(target) error) int {
	defer closeAll(rdbs)
	if !quiet {
		for _, d := range down {
			fmt.Fprintln(stderr, "dlock: "+downWarning(d, len(rdbs), len(down)))
		}
	}
	locker, err := newLocker(rdbs, min(time.Second, f.timeout))
	if err != nil { // the URLs were checked: cannot happen
		fmt.Fprintln(stderr, err)
		return exitUsage
	}
	defer locker.Close()
	return finish(fn(target{locker: locker, nodes: rdbs, down: down}), stderr)
}

// parseKeyAndFlags parses a verb's command line of one KEY with flags before
// or after it, as in "dlock status nightly --json".
func parseKeyAndFlags(fs *flag.FlagSet, args []string, stdout, stderr io.Writer) (key string, code int, done bool) {
	if code, done := parseFlags(fs, args, len(args), stdout, stderr); done {
		return "", code, true
	}
	if fs.NArg() == 0 {
		fmt.Fprintf(stderr, "%s: missing KEY\n", fs.Name())
		fs.Usage()
		return "", exitUsage, true
	}
	if key = fs.Arg(0); key == "" {
		fmt.Fprintf(stderr, "%s: the KEY is empty\n", fs.Name())
		return "", exitUsage, true
	}
	if code, done := parseFlags(fs, fs.Args()[1:], 0, stdout, stderr); done {
		return "", code, true
	}
	return key, exitOK, false
}

// finish prints err, if any, and returns the exit status for it.
func finish(err error, stderr io.Writer) int {
	if err == nil {
		return exitOK
	}
	fmt.Fprintln(stderr, err)
	var refusal *releaseRefusal
	switch {
	case errors.As(err, &refusal):
		return exitUsage // as release without --force
	case errors.Is(err, dlock.ErrInvalidKey), errors.Is(err, dlock.ErrWrongType):
		return exitUsage // the KEY names no lock: as run does
	}
	return exitUnavailable
}

func runStatus(ctx context.Context, args []string, _ io.Reader, stdout, stderr io.Writer) int {
	var f inspectFlags
	fs := newFlagSet("status", "[flags] KEY", `
Shows whether the lock KEY is held, for how much longer, the last fencing
token handed out for it, its holder as a fingerprint of the holder's token
(8 hex digits, never the token: whoever knows the token can release the
lock; dlock run -v logs its own), and, if waiters queue for it (dlock run
--wait, or a program's Obtain, on a single server), how many; waiters on a
Redlock quorum leave no trace and are not counted. A fence is shown with
the time it stands for: the server's time when its holder obtained the lock.
On a Redlock quorum (several --redis), the lock is held when a majority of
the servers hold it with the same token; the ttl shown is the least among
them.

Exit status (as dlock leader's):
  0   the lock is held
  3   the lock is free
  64  usage error
  69  Redis could not be reached, or failed`)
	f.register(fs)
	key, code, done := parseKeyAndFlags(fs, args, stdout, stderr)
	if done {
		return code
	}
	held := true
	code = f.do(ctx, stderr, false, func(ctx context.Context, t target) error {
		info, err := t.locker.Inspect(ctx, key)
		if err != nil {
			return err
		}
		held = info.Held
		return printStatus(stdout, info, f.asJSON)
	})
	if code == exitOK && !held {
		return exitNone
	}
	return code
}

func runList(ctx context.Context, args []string, _ io.Reader, stdout, stderr io.Writer) int {
	var f inspectFlags
	fs := newFlagSet("list", "[flags]", `
Lists the locks taken by dlock that are held now, with their remaining time
to live, fence, holder (a fingerprint of the holder's token, as status
shows it) and their number of waiters. The keys of one lock of several keys
(dlock run --key a --key b, or a program's ObtainMulti; kind multi) share
one line; in --json each has its own entry, whose "keys" lists them all. It walks the keyspace with SCAN (never KEYS, which would block
Redis), on every primary of a Cluster; locks taken or released meanwhile
may be missed. Locks taken by other clients with a plain SET NX are not
listed. On a Redlock quorum (several --redis), it scans every server that
answers, and lists the locks that a majority of them hold.

The packages around dlock keep records that look like locks: a job's done
record (dlock:job:NAME@SLOT/done, held for a day), the records of its
attempts, an election's vacancy (dlock:vacancy:NAME, held by those that
watch an empty seat). list leaves them out, and says how many, unless
--all; the WHAT column (and "what" in --json) says what a package's key
is for.`)
	f.register(fs)
	match := fs.String("match", "*", "list only the locks whose key matches this Redis glob `PATTERN`, as in 'job:*'")
	all := fs.Bool("all", false, "list the records of packages too (jobs' done records, elections' vacancies...)")
	if code, done := parseFlags(fs, args, 0, stdout, stderr); done {
		return code
	}
	return f.do(ctx, stderr, false, func(ctx context.Context, t target) error {
		return listLocks(ctx, stdout, t, *match, *all, f.asJSON)
	})
}

func runRelease(ctx context.Context, args []string, _ io.Reader, stdout, stderr io.Writer) int {
	var f inspectFlags
	fs := newFlagSet("release", "--force [flags] KEY", `
Deletes the lock KEY whoever holds it, and wakes its waiters. Use it for a
lock whose holder is gone for good: a holder that is still running is not
told, and shares what the lock protected with the next holder until it
next renews. It refuses to act without --force. It deletes the holder it
finds, and never one that takes the lock after it looked.

It refuses, and says what the key is, when KEY is no lock:
  - a record of a package that looks like a lock (a job's done record
    dlock:job:NAME@SLOT/done, an election's vacancy dlock:vacancy:NAME, an
    idempotent call's stored outcome...): it says what deleting it undoes
    ("the job will run again in its slot"); add --record to delete it;
  - a string that dlock did not take as a lock (no fence, no holder name):
    a cached value, or a lock that another client took with SET NX; add
    --not-a-lock to delete it;
  - a key of another type: never deleted.
On a Redlock quorum (several --redis), it deletes the holder on every
server that answers and still holds it.`)
	f.register(fs)
	force := fs.Bool("force", false, "really delete the lock, whoever holds it")
	var allow releaseFlags
	fs.BoolVar(&allow.record, "record", false, "with --force: delete KEY also if it is a record of a package (a job's done record, an\nelection's vacancy...), which release describes")
	fs.BoolVar(&allow.notALock, "not-a-lock", false, "with --force: delete KEY also if it holds a string that dlock did not take as a lock\n(a cached value, or a lock of another client)")
	key, code, done := parseKeyAndFlags(fs, args, stdout, stderr)
	if done {
		return code
	}
	if !*force {
		fmt.Fprintf(stderr, "dlock release: this deletes the lock %q whoever holds it, and its holder may still be working;\nadd --force if that is what you want\n", key)
		return exitUsage
	}
	return f.do(ctx, stderr, false, func(ctx context.Context, t target) error {
		return forceRelease(ctx, stdout, t.locker, key, allow, f.asJSON)
	})
}

func runCheck(ctx context.Context, args []string, _ io.Reader, stdout, stderr io.Writer) int {
	var f inspectFlags
	fs := newFlagSet("check", "[flags]", `
Asks the Redis server (every primary of a Cluster) for settings that silently
weaken locks: an eviction policy that may evict a held lock, no append-only
file (a restart loses every lock), an append-only file not synced on every
write. Exits 0 when it finds none, 1 when it warns. Settings that the user's
ACL may not read are not checked. On a Redlock quorum (several --redis),
it checks each server, and warns about each one that cannot be reached.`)
	f.register(fs)
	if code, done := parseFlags(fs, args, 0, stdout, stderr); done {
		return code
	}
	found := false
	code := f.do(ctx, stderr, true, func(ctx context.Context, t target) error {
		warnings, err := checkTarget(ctx, t)
		if err != nil {
			return err
		}
		found = len(warnings) > 0
		if f.asJSON {
			return json.NewEncoder(stdout).Encode(struct {
				Warnings []string `json:"warnings"`
			}{append([]string{}, warnings...)})
		}
		if !found {
			_, err = fmt.Fprintln(stdout, "no setting that weakens locks found")
		}
		for _, w := range warnings {
			if _, err = fmt.Fprintln(stdout, "warning: "+w); err != nil {
				break
			}
		}
		return err
	})
	if code == exitOK && found {
		return exitFail
	}
	return code
}
