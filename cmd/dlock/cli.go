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
	"strings"
	"syscall"
	"text/tabwriter"
)

// Exit statuses.
const (
	exitOK    = 0 // done, and every check held
	exitFail  = 1 // something went wrong at run time: Redis unreachable, an invariant broken
	exitUsage = 2 // the command line is wrong; the usage was printed
)

// A command is one verb of the CLI. It parses its own arguments with its own
// flag.FlagSet (see newFlagSet) and returns the exit status.
type command struct {
	name    string
	summary string // one line, for dlock's usage
	run     func(ctx context.Context, args []string, stdout, stderr io.Writer) int
}

// commands lists the verbs of dlock, in the order the usage shows them.
// Adding a verb is adding an entry here.
func commands() []command {
	return []command{
		{name: "demo", summary: "run the cases this project started from and check their invariants", run: runDemo},
	}
}

// run is the whole program: main only hands it the arguments (without the
// program name) and the output streams, and exits with what it returns.
func run(args []string, stdout, stderr io.Writer) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return dispatch(ctx, args, stdout, stderr)
}

func dispatch(ctx context.Context, args []string, stdout, stderr io.Writer) int {
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
			return cmd.run(ctx, rest, stdout, stderr)
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
		fmt.Fprintf(stderr, "%s: %v\n", fs.Name(), err)
	case fs.NArg() > maxArgs:
		fmt.Fprintf(stderr, "%s: unexpected argument %q\n", fs.Name(), fs.Arg(maxArgs))
	default:
		fs.SetOutput(stderr)
		return exitOK, false
	}
	fs.SetOutput(stderr)
	fs.Usage()
	return exitUsage, true
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
