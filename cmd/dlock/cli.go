package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime/debug"
	"strconv"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"
)

// Exit statuses. Those from 64 on are the BSD sysexits.h codes, which
// cron jobs and their wrappers understand; the run verb also passes on its
// command's own status.
const (
	exitOK          = 0  // done, and every check held
	exitFail        = 1  // something went wrong that has no status of its own (the demo: any failure)
	exitNone        = 3  // status: the lock is free; leader: no leader
	exitUsage       = 64 // EX_USAGE: the command line is wrong; the error says how
	exitUnavailable = 69 // EX_UNAVAILABLE: Redis cannot be reached, or failed
	exitNotObtained = 75 // EX_TEMPFAIL: run: another holder has the lock (default of --conflict-exit-code)
	exitLockLost    = 76 // run: the lock was lost before the command ended (which was terminated, or ended first)
	exitSlotTaken   = 79 // run --once-per: the slot is done, running elsewhere, or out of attempts
)

// exitStatuses is the one table of dlock's exit statuses, for every verb:
// dlock --help shows it, and so does the command's page, docs/cli.md
// (TestExitStatusTable keeps the two alike). Each verb's help says which
// apply to it.
var exitStatuses = []struct{ code, meaning string }{
	{strconv.Itoa(exitOK), "done: the command that run or elect ran exited 0; status: the lock is held; leader: a leader leads; check: no warning"},
	{strconv.Itoa(exitFail), "demo: an invariant broke; check: a setting weakens locks"},
	{strconv.Itoa(exitNone), "status: the lock is free; leader: nobody leads"},
	{strconv.Itoa(exitUsage), "usage error (EX_USAGE): a bad flag, argument or URL; release: no --force, or the key is no lock and the flag that allows it is missing"},
	{strconv.Itoa(exitUnavailable), "Redis could not be reached, or failed (EX_UNAVAILABLE); on a Redlock quorum, fewer than a majority of its servers answered"},
	{strconv.Itoa(exitNotObtained), "run: the lock was not obtained: another holder has it, or earlier --fair waiters go first (EX_TEMPFAIL; --conflict-exit-code changes it)"},
	{strconv.Itoa(exitLockLost), "run: the lock was lost before the command ended: dlock terminated the command, or found the lock gone when it ended"},
	{strconv.Itoa(exitSlotTaken), "run --once-per: the slot is done already, running on another host, or failed there (--conflict-exit-code changes it)"},
	{strconv.Itoa(exitCannotExecute), "run, elect: the command could not be started"},
	{strconv.Itoa(exitNotFound), "run, elect: the command was not found"},
	{"128+N", "run, elect: signal N killed the command, or reached dlock before the command started"},
	{"other", "run, elect: the command's own exit status"},
}

// A command is one verb of the CLI. It parses its own arguments with its own
// flag.FlagSet (see newFlagSet) and returns the exit status. stdin is what a
// verb that runs a program hands on to it; the others ignore it.
type command struct {
	name    string
	summary string // one line, for dlock's usage
	run     func(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int
}

// commands lists the verbs of dlock, in the order the usage shows them.
// Adding a verb is adding an entry here.
func commands() []command {
	return []command{
		{name: "run", summary: "run a command under a lock, once or one at a time across hosts", run: runRun},
		{name: "jobs", summary: "show the recent attempts of a --once-per job: dlock jobs history KEY", run: runJobs},
		{name: "elect", summary: "keep a command running on exactly one host: campaign, run it while leading", run: runElect},
		{name: "leader", summary: "show who leads an election, and its term; --watch for each change", run: runLeader},
		{name: "status", summary: "show whether a lock is held, for how long, and its last fence", run: runStatus},
		{name: "list", summary: "list the locks held now", run: runList},
		{name: "top", summary: "watch the locks held, refreshed in place: holders, ttl, waiters, acquisitions per second", run: runTop},
		{name: "release", summary: "delete a lock whoever holds it (with --force)", run: runRelease},
		{name: "check", summary: "warn about Redis settings that weaken locks", run: runCheck},
		{name: "demo", summary: "run the classic cases of distributed locking and check their invariants", run: runDemo},
	}
}

// run is the whole program: main only hands it the arguments (without the
// program name) and the standard streams, and exits with what it returns.
//
// SIGINT and SIGTERM cancel ctx, which stops a verb cleanly. The run verb
// ignores that: it handles them, and SIGHUP, itself, to pass them on to its
// command (see runRun).
func run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	ctx := context.Background()
	if sigs := notIgnored(os.Interrupt, syscall.SIGTERM); len(sigs) > 0 { // none would mean all
		var stop context.CancelFunc
		ctx, stop = signal.NotifyContext(ctx, sigs...)
		defer stop()
	}
	return dispatch(ctx, args, stdin, stdout, stderr)
}

// notIgnored returns those of sigs that are not ignored. A signal ignored
// when dlock started, as nohup does with SIGHUP and a shell with SIGINT for
// a background job, must stay ignored, for dlock and for the command that
// the run verb starts (which inherits that): asking to be notified of it
// would undo that.
func notIgnored(sigs ...os.Signal) []os.Signal {
	var wanted []os.Signal
	for _, sig := range sigs {
		if !signal.Ignored(sig) {
			wanted = append(wanted, sig)
		}
	}
	return wanted
}

func dispatch(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("dlock", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {} // printed below, on stdout or stderr as fits
	version := fs.Bool("version", false, "print the version of dlock and exit")
	switch err := fs.Parse(args); {
	case errors.Is(err, flag.ErrHelp):
		usage(stdout, fs)
		return exitOK
	case err != nil:
		usage(stderr, fs)
		return exitUsage
	case *version:
		fmt.Fprintln(stdout, versionString())
		return exitOK
	case fs.NArg() == 0:
		fmt.Fprintln(stderr, "dlock: no command given")
		usage(stderr, fs)
		return exitUsage
	}
	verb, rest := fs.Arg(0), fs.Args()[1:]
	if verb == "help" { // "dlock help demo" is "dlock demo --help"
		if len(rest) == 0 {
			usage(stdout, fs)
			return exitOK
		}
		verb, rest = rest[0], []string{"--help"}
	}
	for _, cmd := range commands() {
		if cmd.name == verb {
			return cmd.run(ctx, rest, stdin, stdout, stderr)
		}
	}
	fmt.Fprintf(stderr, "dlock: unknown command %q\n", verb)
	usage(stderr, fs)
	return exitUsage
}

func usage(w io.Writer, fs *flag.FlagSet) {
	fmt.Fprint(w, "Usage: dlock [--version] <command> [flags]\n\n")
	fmt.Fprint(w, "dlock runs work under distributed locks on Redis.\n\nCommands:\n")
	tw := tabwriter.NewWriter(w, 0, 0, 4, ' ', 0)
	for _, cmd := range commands() {
		fmt.Fprintf(tw, "  %s\t%s\n", cmd.name, cmd.summary)
	}
	tw.Flush()
	fmt.Fprint(w, "\nFlags:\n")
	fs.SetOutput(w)
	fs.PrintDefaults()
	fmt.Fprint(w, "\nRun 'dlock <command> --help' for the flags of a command.\n")
	fmt.Fprint(w, "\nExit status:\n")
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	for _, e := range exitStatuses {
		for i, line := range wrap(e.meaning, 70) {
			code := e.code
			if i > 0 {
				code = ""
			}
			fmt.Fprintf(tw, "  %s\t%s\n", code, line)
		}
	}
	tw.Flush()
}

// wrap cuts text into lines of at most width bytes, between words.
func wrap(text string, width int) []string {
	var lines []string
	line := ""
	for _, word := range strings.Fields(text) {
		if line != "" && len(line)+1+len(word) > width {
			lines = append(lines, line)
			line = ""
		}
		if line != "" {
			line += " "
		}
		line += word
	}
	return append(lines, line)
}

// newFlagSet returns the FlagSet of a verb, whose usage reads
//
//	Usage: dlock <verb> <synopsis>
//
//	<about>
//
//	Flags:
//	...
//
// parseFlags prints it: on stdout when asked for with --help, on stderr
// after a mistake.
func newFlagSet(verb, synopsis, about string) *flag.FlagSet {
	fs := flag.NewFlagSet("dlock "+verb, flag.ContinueOnError)
	fs.Usage = func() {
		w := fs.Output()
		fmt.Fprintf(w, "Usage: dlock %s %s\n\n%s\n\nFlags:\n", verb, synopsis, strings.TrimSpace(about))
		fs.PrintDefaults()
	}
	return fs
}

// parseFlags parses a verb's arguments. When it returns done, the verb must
// return code at once: the user asked for help, or made a mistake that the
// usage explains. No positional arguments are accepted unless maxArgs allows.
func parseFlags(fs *flag.FlagSet, args []string, maxArgs int, stdout, stderr io.Writer) (code int, done bool) {
	fs.SetOutput(io.Discard) // the error and usage are printed below
	err := fs.Parse(args)
	switch {
	case errors.Is(err, flag.ErrHelp):
		fs.SetOutput(stdout)
		fs.Usage()
		return exitOK, true
	case err != nil:
		fmt.Fprintf(stderr, "%s: %s\n", fs.Name(), flagError(fs, err))
	case fs.NArg() > maxArgs:
		fmt.Fprintf(stderr, "%s: unexpected argument %q\n", fs.Name(), fs.Arg(maxArgs))
	default:
		fs.SetOutput(stderr)
		return exitOK, false
	}
	// The mistake, and where to read more: the whole usage would bury it.
	fs.SetOutput(stderr)
	fmt.Fprintf(stderr, "Run '%s --help' for its flags.\n", fs.Name())
	return exitUsage, true
}

// flagError says what is wrong with a flag, as the flag package's err
// does, and for a duration without a unit (--ttl 10), what to write.
func flagError(fs *flag.FlagSet, err error) string {
	msg := err.Error()
	// The flag package's words: invalid value "10" for flag -ttl: parse error
	rest, ok := strings.CutPrefix(msg, "invalid value ")
	if !ok {
		return msg
	}
	value, err := strconv.QuotedPrefix(rest)
	if err != nil {
		return msg
	}
	name, _, _ := strings.Cut(strings.TrimPrefix(rest[len(value):], " for flag -"), ":")
	f := fs.Lookup(name)
	if f == nil {
		return msg
	}
	getter, ok := f.Value.(flag.Getter)
	if !ok {
		return msg
	}
	if _, isDuration := getter.Get().(time.Duration); !isDuration {
		return msg
	}
	value, _ = strconv.Unquote(value)
	if _, err := strconv.ParseFloat(value, 64); err == nil {
		return fmt.Sprintf("--%s %s has no unit: use a unit, e.g. %ss (or ms, m, h)", name, value, value)
	}
	return fmt.Sprintf("--%s %q is no duration: use a number and a unit, e.g. 10s, 1m30s or 2h", name, value)
}

// versionString describes this build: the module version when built with
// "go install ...@version", else "(devel)" and the VCS revision if known.
func versionString() string {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return "dlock (unknown version)"
	}
	version := info.Main.Version
	if version == "" {
		version = "(devel)"
	}
	var revision, modified string
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			revision = s.Value
		case "vcs.modified":
			if s.Value == "true" {
				modified = "+dirty"
			}
		}
	}
	if revision != "" && version == "(devel)" {
		version += " " + revision[:min(12, len(revision))] + modified
	}
	return "dlock " + version + " " + info.GoVersion
}
