package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"time"

	"github.com/dlock-go/dlock"
	"github.com/dlock-go/dlock/election"
)

const electSynopsis = "--key KEY [--value VALUE] [flags] -- COMMAND [ARGS...]"

const electAbout = `elect keeps COMMAND running on exactly one host: every host runs the same
dlock elect, they campaign in the election KEY (package election), and
the leader runs COMMAND while it leads. "dlock leader --key KEY" shows who
leads, with the --value it campaigned with (the host name by default).

The leadership is a lease of --ttl, renewed every third of it. If it is
lost (Redis down or paused past the ttl, the key deleted), COMMAND's process
group gets SIGTERM, and SIGKILL --grace later, as with dlock run; once
COMMAND has exited, dlock campaigns again. A host that dies, or whose dlock
is killed, loses the seat when its lease runs out: another host's dlock
takes over then, and starts its COMMAND. A dlock that dies takes COMMAND
with it on Linux and FreeBSD, as with dlock run (see dlock run --help); on
other systems COMMAND runs on until it ends by itself.

When COMMAND exits by itself, dlock resigns, which lets another host take
over at once, and exits with COMMAND's status. SIGINT, SIGTERM and SIGHUP
sent to dlock are passed on to COMMAND's process group while it runs, and
end dlock while it campaigns:

  dlock elect --key billing-scheduler -- /usr/local/bin/scheduler`

const electNotes = `COMMAND's environment is dlock's, plus:
  DLOCK_KEY   the election's key
  DLOCK_TERM  the term of this leadership: larger than that of every earlier
              leader of KEY, a fencing token to pass to what COMMAND writes

Environment:
  DLOCK_REDIS           the Redis URL, when no --redis is given; several, comma-separated,
                        for a Redlock quorum
  DLOCK_REDIS_PASSWORD  the password, when the URL has none (each URL, on a quorum)

Exit status:
  COMMAND's  when it ended by itself: its own, 128+N if signal N killed it,
             127 if it was not found, 126 if it could not be started
  64         usage error
  69         Redis could not be reached at the start
  128+N      dlock got signal N while it campaigned

Errors of Redis while campaigning are retried, after a pause that grows up
to --ttl; on a terminal or with -v, dlock says so.`

// electExample is the command line that usage errors show.
const electExample = "dlock elect --key scheduler -- /usr/local/bin/scheduler"

// An elector is the elect verb once its command line is parsed: a runner
// of the command that campaigns for the right to run it.
type elector struct {
	*runner
	value string // what the leader tells dlock leader
}

func runElect(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	e, code, done := parseElectArgs(args, os.Getenv, stdout, stderr)
	if done {
		return code
	}
	e.stdin, e.stdout, e.stderr = stdin, stdout, stderr
	if _, isFile := stderr.(*os.File); !isFile {
		e.stderr = &lockedWriter{w: stderr} // as runRun
	}
	e.tty = isTerminal(stderr)
	return e.elect(context.WithoutCancel(ctx))
}

// parseElectArgs parses the command line of the elect verb. When done, the
// verb must return code at once.
func parseElectArgs(args []string, getenv func(string) string, stdout, stderr io.Writer) (e *elector, code int, done bool) {
	e = &elector{runner: &runner{verb: "elect"}}
	fs := newFlagSet("elect", electSynopsis, electAbout)
	usage := fs.Usage
	fs.Usage = func() {
		usage()
		fmt.Fprintf(fs.Output(), "\n%s\n", electNotes)
	}
	host, _ := os.Hostname()
	var urls redisURLs
	fs.StringVar(&e.key, "key", "", "the election's `KEY` in Redis (required): name the service, as in billing-scheduler")
	fs.StringVar(&e.value, "value", host, "what dlock leader shows of this host while it leads, as its address")
	fs.DurationVar(&e.ttl, "ttl", election.DefaultTTL, "the leadership's lease, renewed every third of it: after a crash, the time\nanother host waits to take over. At least "+minRunTTL.String())
	fs.DurationVar(&e.grace, "grace", 10*time.Second, "after the leadership is lost, how long COMMAND has between SIGTERM and SIGKILL")
	fs.Var(&urls, "redis", redisFlagUsage)
	fs.BoolVar(&e.verbose, "v", false, "say on stderr what happens: leading, resigned, campaign errors retried...")

	flagArgs, command, hasDashes := cutDashes(args)
	if code, done := parseFlags(fs, flagArgs, len(flagArgs), stdout, stderr); done {
		return nil, code, true
	}
	e.command = command
	if err := e.check(fs.Args(), hasDashes); err != "" {
		fmt.Fprintf(stderr, "dlock elect: %s\n", err)
		return nil, exitUsage, true
	}
	var err error
	if e.redis, err = pickRedis(urls, getenv); err != nil {
		fmt.Fprintln(stderr, err)
		return nil, exitUsage, true
	}
	return e, exitOK, false
}

// check returns what is wrong with the command line, or "".
func (e *elector) check(extra []string, hasDashes bool) string {
	switch {
	case !hasDashes || len(e.command) == 0:
		return "no command given; put it after --, as in: " + electExample
	case len(extra) > 0:
		return fmt.Sprintf("unexpected argument %q before --: flags go before --, the command after it, as in: %s", extra[0], electExample)
	case e.key == "":
		return "--key is required: name the election, as in: " + electExample
	case len(e.value) > dlock.MaxValueLen:
		return fmt.Sprintf("--value is %d bytes long, over %d", len(e.value), dlock.MaxValueLen)
	case e.ttl < minRunTTL:
		return fmt.Sprintf("--ttl must be at least %v, not %v", minRunTTL, e.ttl)
	case e.grace < 0:
		return fmt.Sprintf("--grace must not be negative, not %v", e.grace)
	}
	return ""
}

// elect campaigns, runs the command while it leads, and campaigns again
// after a loss, until the command ends by itself or a signal ends a
// campaign. It returns the exit status. ctx is never cancelled.
func (e *elector) elect(ctx context.Context) int {
	sigs, stop := catchSignals()
	defer stop()
	before, interrupted := cancelOnSignal(ctx, sigs)
	locker, disconnect, code, err := e.connect(before)
	if sig := interrupted(); sig != nil {
		if err == nil {
			disconnect()
		}
		return signalStatus(sig)
	}
	if err != nil {
		fmt.Fprintln(e.stderr, err)
		return code
	}
	defer disconnect()
	seat, err := election.New(locker, e.key, election.WithTTL(e.ttl))
	if err != nil { // an empty key or a ttl the flags let through
		fmt.Fprintln(e.stderr, err)
		return exitUsage
	}
	for {
		l, code := e.campaign(ctx, seat, sigs)
		if l == nil {
			return code
		}
		status, lost := e.lead(ctx, l, sigs)
		if !lost {
			return status
		}
	}
}

// campaign blocks until this host leads, and returns its leadership; or
// nil and the exit status when a signal or an error that retrying cannot
// mend ended the campaign.
func (e *elector) campaign(ctx context.Context, seat *election.Election, sigs <-chan os.Signal) (*election.Leadership, int) {
	before, interrupted := cancelOnSignal(ctx, sigs)
	e.logf("campaigning in %q as %q", e.key, e.value)
	pause := time.Duration(0)
	var l *election.Leadership
	var err error
	for {
		l, err = seat.Campaign(before, e.value)
		if err == nil || before.Err() != nil || !retryable(err) {
			break
		}
		pause = min(max(2*pause, 10*time.Millisecond), e.ttl)
		e.inform("could not campaign in %q: %s; trying again in %v", e.key, errText(err), pause)
		if sleep(before, pause) != nil {
			break
		}
	}
	if sig := interrupted(); sig != nil {
		if l != nil {
			e.resign(ctx, l)
		}
		e.inform("got %s while campaigning; not running %s", signalName(sig), e.commandLine())
		return nil, signalStatus(sig)
	}
	if err != nil {
		e.errorf("could not campaign in %q: %s", e.key, errText(err))
		if errors.Is(err, dlock.ErrWrongType) {
			return nil, exitUsage
		}
		return nil, exitUnavailable
	}
	return l, exitOK
}

// retryable reports whether a campaign that failed with err may succeed
// if tried again: Redis failed, rather than the key or the Client.
func retryable(err error) bool {
	return !errors.Is(err, dlock.ErrWrongType) && !errors.Is(err, dlock.ErrInvalidKey) &&
		!errors.Is(err, dlock.ErrClosed) && !errors.Is(err, election.ErrInvalid) &&
		!errors.Is(err, dlock.ErrInvalidOption)
}

// lead runs the command for one term, and returns its exit status and
// whether the leadership was lost, in which case the command was
// terminated and elect campaigns again.
func (e *elector) lead(ctx context.Context, l *election.Leadership, sigs <-chan os.Signal) (status int, lost bool) {
	e.leaseDesc = fmt.Sprintf("the leadership of %q (term %d)", e.key, l.Term())
	e.logf("leading %q in term %s", e.key, withTime(l.Term()))
	c, err := e.start([]string{"DLOCK_KEY=" + e.key, "DLOCK_TERM=" + strconv.FormatInt(l.Term(), 10)})
	if err != nil {
		e.errorf("cannot run %s: %v", e.commandLine(), err)
		e.resign(ctx, l)
		return startFailedStatus(err), false
	}
	status, lost = e.supervise(c, l, sigs)
	switch {
	case lost:
		e.inform("%s ended with status %d; campaigning again", e.commandLine(), status)
		return status, true
	case l.Err() != nil: // lost as the command exited
		e.errorf("lost %s before %s ended: %s", e.leaseName(), e.commandLine(), lostReason(l.Err()))
		return status, false
	}
	e.resign(ctx, l)
	return status, false
}

// resign gives the leadership up, and says so if it cannot.
func (e *elector) resign(ctx context.Context, l *election.Leadership) {
	ctx, cancel := context.WithTimeout(ctx, redisTimeout)
	defer cancel()
	if err := l.Resign(ctx); err != nil {
		e.errorf("could not resign %s: %s; another host takes over within %v", e.leaseName(), errText(err), e.ttl)
		return
	}
	e.logf("resigned %s", e.leaseName())
}

// sleep waits for d, or until ctx is done.
func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return context.Cause(ctx)
	}
}
