package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/dlock-go/dlock"
)

const runSynopsis = "--key KEY [flags] -- COMMAND [ARGS...]"

const runAbout = `run runs COMMAND under a lock on Redis, so that it runs once, or one at a
time, across hosts: a distributed flock for cron jobs. When another holder
has the lock, COMMAND does not run; with --wait, it runs when the lock comes
free, if that is soon enough. With --fair, the dlock runs that wait get the
lock in the order they arrived, through a queue kept in Redis next to the
lock; without it, whichever asks first after a release gets it.

While COMMAND runs, the lock is renewed every third of --ttl (by the
library's auto-renewal). If it is lost all the same (Redis down or paused
past the ttl, the key deleted), COMMAND's process group gets SIGTERM, and
SIGKILL --grace later.

--key given several times runs COMMAND under the locks of all of the keys,
taken at once, all of them or none (the library's ObtainMulti): two runs
that name the same keys in other orders never deadlock. On a Redis Cluster,
keys in several slots are taken one slot after the other, in slot order,
and those taken are released while dlock waits; keys with one hash tag, as
in {acct}:3 and {acct}:7, are taken in one step. --fair, --limit and
--once-per take one key. SIGINT, SIGTERM and SIGHUP sent to dlock are passed
on to COMMAND's process group (so COMMAND cannot read from a terminal), and
dlock waits for COMMAND to exit. Then, however COMMAND ended, dlock releases
the lock, or with --min-hold keeps it until that long after it was obtained.

If dlock itself dies (SIGKILL, the OOM killer), COMMAND gets SIGKILL from
the kernel on Linux and FreeBSD (the parent-death signal), so that it does
not run on without the lock; processes COMMAND started in the background
are not killed with it. On macOS and other systems COMMAND runs on until it
ends by itself.

Give a quick job --min-hold: released at once, the lock would be free when
a host whose clock is a little behind fires the same cron entry, and the job
would run twice. In a crontab:

  0 2 * * * dlock run --key nightly-report --min-hold 5m -- /usr/local/bin/report

Several --redis URLs (three or five independent servers, none a replica of
another) make a Redlock quorum: the lock is obtained when a majority of the
servers grant it, renewed while a majority still hold it, and lost when
they no longer do, so it outlives a minority of them failing. dlock goes on
while a majority of them answer (on a terminal or with -v, it warns about
the others), and exits 69 when they do not. --fair needs a single server.

With --once-per, COMMAND runs at most once per slot of that length across
hosts (package jobs): the slot is the period that dlock starts in by the
host's clock (periods counted in UTC: a 24h period starts at midnight UTC;
a start up to min(1s, period/100) early counts for the next period), so
hosts whose cron fires in the same period agree on the slot, and a run
that succeeded (exit status 0) leaves a done record that makes every later
dlock of the slot exit 79 without running COMMAND, however late its clock
is. A run that failed is recorded too, and not tried again in the slot.
The records are kept for a day, or two periods if that is longer; dlock
jobs history KEY shows them.
This replaces --min-hold, and excludes --wait and --fair:

  0 2 * * * dlock run --key nightly-report --once-per 24h -- /usr/local/bin/report

With --limit N, the lock is a permit of a semaphore named KEY: at most N
copies of COMMAND run at once across hosts, each under its own permit,
renewed and released as the lock is. Every dlock run of one KEY must give
the same --limit. --wait, --fair and --min-hold work as with a lock; a
Redlock quorum takes --limit 1 only:

  dlock run --key exports --limit 3 --wait 10m -- /usr/local/bin/export`

const runNotes = `COMMAND's environment is dlock's, plus:
  DLOCK_KEY    the lock's key; with several --key, the first in sorted order
  DLOCK_TOKEN  the holder's token, with which the key's value in Redis starts (a secret: it releases the lock)
  DLOCK_FENCE  the fencing token: larger than that of every earlier holder of the key
With --once-per, DLOCK_KEY and, in place of the other two:
  DLOCK_SLOT   the slot, in RFC 3339 (UTC)

Environment:
  DLOCK_REDIS           the Redis URL, when no --redis is given; several, comma-separated,
                        for a Redlock quorum
  DLOCK_REDIS_PASSWORD  the password, when the URL has none (each URL, on a quorum)

Exit status:
  COMMAND's  when it ran: its own, 128+N if signal N killed it,
             127 if it was not found, 126 if it could not be started
  75         the lock was not obtained: another holder has it, or earlier --fair
             waiters go first (--conflict-exit-code)
  76         the lock was lost before COMMAND ended: COMMAND was terminated, or it
             ended first (dlock found the lock gone when releasing it, or keeping it
             for --min-hold) and may have run beside another holder
  79         --once-per: the slot is done already, running on another host, or
             failed there; COMMAND did not run (--conflict-exit-code changes it)
  64         usage error: a bad flag, no --key, no -- before COMMAND, a bad URL,
             the same server twice, --fair with several URLs
  69         Redis could not be reached, or failed; on a Redlock quorum, fewer
             than a majority of its servers answered
  128+N      dlock got signal N before COMMAND started

Without -v, dlock prints only errors, and, when stderr is a terminal, why
COMMAND did not run and how long a wait has left. With -v it says what it
does, and each renewal that failed and is retried; not those that succeed.`

// runExample is the command line that usage errors show.
const runExample = "dlock run --key nightly -- /usr/local/bin/report"

const (
	// minRunTTL is the shortest --ttl: renewed every third of it, the lock
	// needs time for a round trip to Redis and for a retry. The library
	// takes 1ms, for locks a program holds for a moment; a lock that a
	// process runs under must be renewed, and --help says why it is longer.
	minRunTTL = 100 * time.Millisecond
	// redisTimeout bounds the first contact with Redis, the first attempt
	// to obtain the lock, and the release: Redis answers in milliseconds,
	// or is in trouble.
	redisTimeout = 3 * time.Second
)

// runNodeTimeout is how long a round of a Redlock quorum waits for one node
// (dlock.WithNodeTimeout), for a lock of ttl: a tenth of it, between the
// library's default and a second. A node that is down answers at once, with
// an error; this is for one that hangs, and it comes off the validity of an
// acquire or a renewal that waits for it.
func runNodeTimeout(ttl time.Duration) time.Duration {
	return min(max(ttl/10, dlock.DefaultNodeTimeout), time.Second)
}

// runConfig is what the command line of the run verb asks for.
type runConfig struct {
	key          string   // the lock's key; with several, the keys joined by ", ", for messages
	keys         []string // the keys of --key, when it is given more than once
	ttl          time.Duration
	wait         time.Duration // 0: try once
	minHold      time.Duration
	grace        time.Duration
	conflictCode int
	fair         bool          // wait in arrival order (dlock.WithFair)
	limit        int           // run under a permit of a semaphore of this limit; 0: under a lock
	oncePer      time.Duration // run once per slot of this length (package jobs); 0: no slots
	slotCode     int           // the exit status when --once-per does not run the command
	verbose      bool
	redis        []redisServer // one, or the nodes of a Redlock quorum
	command      []string
}

// keyList is the --key flag of the run verb: given several times, the keys
// of one multi-key lock.
type keyList []string

func (k *keyList) String() string     { return strings.Join(*k, ", ") }
func (k *keyList) Set(s string) error { *k = append(*k, s); return nil }

// runRun is the run verb. Once its flags are parsed it handles SIGINT,
// SIGTERM and SIGHUP itself and ignores the cancellation of ctx, which the
// same signals cause: before the command starts a signal stops dlock, after
// it is passed on to the command, and dlock goes on to wait for the command
// and to release the lock.
func runRun(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	cfg, code, done := parseRunArgs(args, os.Getenv, stdout, stderr)
	if done {
		return code
	}
	r := &runner{runConfig: cfg, stdin: stdin, stdout: stdout, stderr: stderr}
	if _, isFile := stderr.(*os.File); !isFile {
		// The command writes to stderr from a goroutine of os/exec;
		// a file it inherits instead, and writes to it itself.
		r.stderr = &lockedWriter{w: stderr}
	}
	r.tty = isTerminal(stderr)
	return r.run(context.WithoutCancel(ctx))
}

// parseRunArgs parses the command line of the run verb. When done, the verb
// must return code at once. getenv is os.Getenv, or a stand-in in tests.
func parseRunArgs(args []string, getenv func(string) string, stdout, stderr io.Writer) (cfg runConfig, code int, done bool) {
	fs := newFlagSet("run", runSynopsis, runAbout)
	usage := fs.Usage
	fs.Usage = func() {
		usage()
		fmt.Fprintf(fs.Output(), "\n%s\n", runNotes)
	}
	var urls redisURLs
	var keys keyList
	fs.Var(&keys, "key", "the lock's `KEY` in Redis (required): name the job, as in nightly-report;\ngiven several times, the command runs under the locks of all of the keys")
	fs.DurationVar(&cfg.ttl, "ttl", 30*time.Second, "the lock's time to live; it is renewed every third of it while COMMAND runs.\nAt least "+minRunTTL.String()+", though the library takes 1ms: a renewal must fit a round trip\nto Redis and a retry in a third of the ttl, on a host busy starting COMMAND")
	fs.DurationVar(&cfg.wait, "wait", 0, "how long to wait for the lock while another holder has it; 0 tries once")
	fs.Var(&urls, "redis", redisFlagUsage)
	fs.DurationVar(&cfg.minHold, "min-hold", 0, "keep the lock at least this long after obtaining it, even if COMMAND ends sooner,\nso that a host whose clock is behind finds it taken and does not run the job again")
	fs.DurationVar(&cfg.grace, "grace", 10*time.Second, "after the lock is lost, how long COMMAND has between SIGTERM and SIGKILL")
	fs.IntVar(&cfg.conflictCode, "conflict-exit-code", exitNotObtained, "the exit `status` when another holder has the lock")
	fs.BoolVar(&cfg.fair, "fair", false, "wait in arrival order: with --wait, get the lock after the --fair waiters that\ncame before; without, do not take it ahead of them")
	fs.IntVar(&cfg.limit, "limit", 0, "run under a permit of a semaphore named KEY: at most `N` copies at once across\nhosts (every dlock run of KEY must give the same N)")
	fs.DurationVar(&cfg.oncePer, "once-per", 0, "run COMMAND at most once per slot of this `period` across hosts, as in 24h;\nwhen the slot is done or taken, exit "+strconv.Itoa(exitSlotTaken))
	fs.BoolVar(&cfg.verbose, "v", false, "say on stderr what happens: obtained, released, renewals that failed...")

	flagArgs, command, hasDashes := cutDashes(args)
	if code, done := parseFlags(fs, flagArgs, len(flagArgs), stdout, stderr); done {
		return cfg, code, true
	}
	cfg.command = command
	cfg.key = strings.Join(keys, ", ")
	if len(keys) > 1 {
		cfg.keys = keys
	}
	cfg.slotCode = exitSlotTaken
	fs.Visit(func(f *flag.Flag) {
		if f.Name == "conflict-exit-code" {
			cfg.slotCode = cfg.conflictCode
		}
	})
	if err := cfg.check(fs.Args(), hasDashes); err != "" {
		fmt.Fprintf(stderr, "dlock run: %s\n", err)
		return cfg, exitUsage, true
	}
	var err error
	if cfg.redis, err = pickRedis(urls, getenv); err != nil {
		fmt.Fprintln(stderr, err)
		return cfg, exitUsage, true
	}
	if cfg.fair && len(cfg.redis) > 1 {
		fmt.Fprintf(stderr, "dlock run: --fair needs a single Redis deployment: %s make a Redlock quorum,\n"+
			"which has no arrival-order queue; drop --fair, or give one URL\n", severalURLs(cfg.redis))
		return cfg, exitUsage, true
	}
	if cfg.limit > 1 && len(cfg.redis) > 1 {
		fmt.Fprintf(stderr, "dlock run: --limit %d needs a single Redis deployment: on the Redlock quorum %s make,\n"+
			"two majorities can each see room for a permit; give one URL, or --limit 1\n", cfg.limit, severalURLs(cfg.redis))
		return cfg, exitUsage, true
	}
	return cfg, exitOK, false
}

// cutDashes splits args at the first "--" into the flags and the command.
func cutDashes(args []string) (flags, command []string, found bool) {
	for i, arg := range args {
		if arg == "--" {
			return args[:i], args[i+1:], true
		}
	}
	return args, nil, false
}

// check returns what is wrong with cfg, or "". extra are the arguments
// left before "--" once the flags were parsed.
func (cfg *runConfig) check(extra []string, hasDashes bool) string {
	switch {
	case !hasDashes && len(extra) > 0:
		return "put -- before the command, as in: " + runExample
	case !hasDashes:
		return "no command given; put it after --, as in: " + runExample
	case len(extra) > 0:
		return fmt.Sprintf("unexpected argument %q before --: flags go before --, the command after it, as in: %s", extra[0], runExample)
	case len(cfg.command) == 0:
		return "no command after --; as in: " + runExample
	case cfg.key == "":
		return "--key is required: name the lock, as in: " + runExample
	case slices.Contains(cfg.keys, ""):
		return "--key must not be empty"
	case len(cfg.keys) > 0 && (cfg.fair || cfg.limit > 0 || cfg.oncePer > 0):
		return "--fair, --limit and --once-per take one --key, not several"
	case cfg.ttl < minRunTTL:
		return fmt.Sprintf("--ttl must be at least %v, not %v: the lock is renewed every third of it while the command runs,\nand a renewal needs time for a round trip to Redis and a retry", minRunTTL, cfg.ttl)
	case cfg.wait < 0:
		return fmt.Sprintf("--wait must not be negative, not %v", cfg.wait)
	case cfg.minHold < 0:
		return fmt.Sprintf("--min-hold must not be negative, not %v", cfg.minHold)
	case cfg.grace < 0:
		return fmt.Sprintf("--grace must not be negative, not %v", cfg.grace)
	case cfg.conflictCode < 0 || cfg.conflictCode > 255:
		return fmt.Sprintf("--conflict-exit-code must be from 0 to 255, not %d", cfg.conflictCode)
	case cfg.oncePer < 0:
		return fmt.Sprintf("--once-per must not be negative, not %v", cfg.oncePer)
	case cfg.limit < 0:
		return fmt.Sprintf("--limit must be at least 1, not %d", cfg.limit)
	case cfg.oncePer > 0 && cfg.limit > 0:
		return "--once-per does not go with --limit: a slot runs once"
	case cfg.oncePer > 0 && (cfg.wait > 0 || cfg.minHold > 0 || cfg.fair):
		return "--once-per does not go with --wait, --min-hold or --fair: a slot runs once, on the first host to take it,\nand its done record keeps later hosts from running it again"
	}
	return ""
}

// A runner runs one command under one lock: the run verb once its command
// line is parsed.
type runner struct {
	runConfig
	stdin          io.Reader
	stdout, stderr io.Writer // stderr is safe for concurrent use
	tty            bool      // stderr is a terminal
	leaseDesc      string    // what the command runs under, for messages; "" for the lock on the key
	verb           string    // the verb that runs the command, for the holder's name: "run" or "elect"; "" for run
}

// run obtains the lock, runs the command and releases the lock, and returns
// the exit status. ctx is never cancelled: signals arrive on a channel.
func (r *runner) run(ctx context.Context) int {
	sigs, stop := catchSignals()
	defer stop()
	before, interrupted := cancelOnSignal(ctx, sigs) // until the command starts

	locker, disconnect, code, err := r.connect(before)
	if err != nil {
		if sig := interrupted(); sig != nil {
			return signalStatus(sig)
		}
		fmt.Fprintln(r.stderr, err)
		return code
	}
	defer disconnect()

	if r.oncePer > 0 {
		return r.runOnce(ctx, before, interrupted, locker, sigs)
	}
	lock, code := r.obtain(before, locker)
	obtained := time.Now()
	sig := interrupted()
	switch {
	case sig != nil:
		if lock != nil {
			r.release(ctx, lock, -1)
		}
		r.inform("got %s before %s started; not running it", signalName(sig), r.commandLine())
		return signalStatus(sig)
	case lock == nil:
		return code
	}
	return r.runLocked(ctx, held{lock, obtained}, sigs)
}

// errorf prints an error: always.
func (r *runner) errorf(format string, args ...any) {
	fmt.Fprintf(r.stderr, "dlock: "+format+"\n", args...)
}

// inform prints what a person at a terminal wants to know: with -v, or when
// stderr is a terminal.
func (r *runner) inform(format string, args ...any) {
	if r.verbose || r.tty {
		r.errorf(format, args...)
	}
}

// logf prints what happens, with -v.
func (r *runner) logf(format string, args ...any) {
	if r.verbose {
		r.errorf(format, args...)
	}
}

// commandLine returns the command for messages: quoted, and shortened if long.
func (r *runner) commandLine() string {
	const maxLen = 60
	line := strings.Join(r.command, " ")
	if utf8.RuneCountInString(line) > maxLen {
		line = string([]rune(line)[:maxLen-3]) + "..."
	}
	return strconv.Quote(line)
}

// errText returns the message of err without the "dlock: " that messages
// of this CLI already start with.
func errText(err error) string {
	return strings.TrimPrefix(err.Error(), "dlock: ")
}

// isTerminal reports whether w is a terminal. /dev/null, a character device
// too, is not.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	info, err := f.Stat()
	if err != nil || info.Mode()&os.ModeCharDevice == 0 {
		return false
	}
	null, err := os.Stat(os.DevNull)
	return err != nil || !os.SameFile(info, null)
}

// lockedWriter makes a writer safe for concurrent use.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}
