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
	Kind      string `json:"kind,omitempty"`        // "lock", "semaphore" or "rwmutex" when held
	Limit     int    `json:"limit,omitempty"`       // a semaphore's
	// Holders are a semaphore's or an RW lock's holders, one per permit or hold
	Holders []holderJSON `json:"holders,omitempty"`
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
		b.WriteString(holderName(info.HolderName, info.Fingerprint))
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

// holderName names a holder: by its name if it has one, else by its
// fingerprint.
func holderName(name, fingerprint string) string {
	if name == "" {
		return fingerprint
	}
	return name + " [" + fingerprint + "]"
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
		return "writer " + holderName(info.Holders[0].HolderName, info.Holders[0].Fingerprint)
	}
	return fmt.Sprintf("%d readers", len(info.Holders))
}

func showTTL(ttl time.Duration) string {
	if ttl < 0 {
		return "no expiry"
	}
	return ttl.Round(time.Millisecond).String()
}

func showFence(fence int64) string {
	if fence == 0 {
		return "unknown"
	}
	return strconv.FormatInt(fence, 10)
}

// printStatus writes what dlock status shows of one lock.
func printStatus(w io.Writer, info dlock.LockInfo, asJSON bool) error {
	if asJSON {
		return json.NewEncoder(w).Encode(toJSON(info))
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "key:\t%q\n", info.Key)
	if !info.Held {
		fmt.Fprintf(tw, "held:\tno\n")
		if info.Fence != 0 {
			fmt.Fprintf(tw, "last fence:\t%d\n", info.Fence)
		}
		if info.Waiters > 0 { // free for a moment: the first waiter is about to take it
			fmt.Fprintf(tw, "waiters:\t%d\n", info.Waiters)
		}
		return tw.Flush()
	}
	fmt.Fprintf(tw, "held:\tyes\n")
	fmt.Fprintf(tw, "summary:\t%s\n", heldBy(info, time.Now()))
	fmt.Fprintf(tw, "kind:\t%s\n", info.Kind)
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
		fmt.Fprintf(tw, "  %s:\t%s, ttl %s, fence %s\n", h.Mode, holderName(h.HolderName, h.Fingerprint), showTTL(h.TTL), showFence(h.Fence))
	}
	if info.Waiters > 0 { // a lock nobody waits for has none to show
		fmt.Fprintf(tw, "waiters:\t%d\n", info.Waiters)
	}
	return tw.Flush()
}

// listLocks writes the locks that match pattern, as a table or a JSON array.
func listLocks(ctx context.Context, w io.Writer, t target, pattern string, asJSON bool) error {
	locks, err := scanLocks(ctx, t, pattern)
	if err != nil {
		return err
	}
	if asJSON {
		out := make([]lockJSON, 0, len(locks))
		for _, info := range locks {
			out = append(out, toJSON(info))
		}
		return json.NewEncoder(w).Encode(out)
	}
	if len(locks) == 0 {
		_, err := fmt.Fprintf(w, "no locks match %q\n", pattern)
		return err
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "KEY\tKIND\tTTL\tFENCE\tHOLDER\tWAITERS")
	for _, info := range locks {
		holder := showHolder(info)
		if info.Holders == nil {
			holder = holderName(info.HolderName, info.Fingerprint)
		}
		fmt.Fprintf(tw, "%q\t%s\t%s\t%s\t%s\t%d\n", info.Key, info.Kind, showTTL(info.TTL), showFence(info.Fence), holder, info.Waiters)
	}
	return tw.Flush()
}

// forceRelease deletes a lock whoever holds it and says what it did.
func forceRelease(ctx context.Context, w io.Writer, locker *dlock.Client, key string, asJSON bool) error {
	released, err := locker.ForceRelease(ctx, key)
	if err != nil {
		return err
	}
	if asJSON {
		return json.NewEncoder(w).Encode(struct {
			Key      string `json:"key"`
			Released bool   `json:"released"`
		}{key, released})
	}
	if released {
		_, err = fmt.Fprintf(w, "released %q; its holder, if still running, is no longer protected\n", key)
	} else {
		_, err = fmt.Fprintf(w, "%q was not held: nothing to release\n", key)
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
	return finish(fn(ctx, target{locker: locker, nodes: rdbs, down: down}), stderr)
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
	switch {
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
Redlock quorum leave no trace and are not counted. Exits 0 whether or not
the lock is held; --json
says which, for scripts. On a Redlock quorum (several --redis), the lock is
held when a majority of the servers hold it with the same token; the ttl
shown is the least among them.`)
	f.register(fs)
	key, code, done := parseKeyAndFlags(fs, args, stdout, stderr)
	if done {
		return code
	}
	return f.do(ctx, stderr, false, func(ctx context.Context, t target) error {
		info, err := t.locker.Inspect(ctx, key)
		if err != nil {
			return err
		}
		return printStatus(stdout, info, f.asJSON)
	})
}

func runList(ctx context.Context, args []string, _ io.Reader, stdout, stderr io.Writer) int {
	var f inspectFlags
	fs := newFlagSet("list", "[flags]", `
Lists the locks taken by dlock that are held now, with their remaining time
to live, fence, holder (a fingerprint of the holder's token, as status
shows it) and their number of waiters. It walks the keyspace with SCAN (never KEYS, which would block
Redis), on every primary of a Cluster; locks taken or released meanwhile
may be missed. Locks taken by other clients with a plain SET NX are not
listed. On a Redlock quorum (several --redis), it scans every server that
answers, and lists the locks that a majority of them hold.`)
	f.register(fs)
	match := fs.String("match", "*", "list only the locks whose key matches this Redis glob `PATTERN`, as in 'job:*'")
	if code, done := parseFlags(fs, args, 0, stdout, stderr); done {
		return code
	}
	return f.do(ctx, stderr, false, func(ctx context.Context, t target) error {
		return listLocks(ctx, stdout, t, *match, f.asJSON)
	})
}

func runRelease(ctx context.Context, args []string, _ io.Reader, stdout, stderr io.Writer) int {
	var f inspectFlags
	fs := newFlagSet("release", "--force [flags] KEY", `
Deletes the lock KEY whoever holds it, and wakes its waiters. Use it for a
lock whose holder is gone for good: a holder that is still running is not
told, and shares what the lock protected with the next holder until it
next renews. It refuses to act without --force. On a Redlock quorum
(several --redis), it deletes the lock on every server that answers.`)
	f.register(fs)
	force := fs.Bool("force", false, "really delete the lock, whoever holds it")
	key, code, done := parseKeyAndFlags(fs, args, stdout, stderr)
	if done {
		return code
	}
	if !*force {
		fmt.Fprintf(stderr, "dlock release: this deletes the lock %q whoever holds it, and its holder may still be working;\nadd --force if that is what you want\n", key)
		return exitUsage
	}
	return f.do(ctx, stderr, false, func(ctx context.Context, t target) error {
		return forceRelease(ctx, stdout, t.locker, key, f.asJSON)
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
