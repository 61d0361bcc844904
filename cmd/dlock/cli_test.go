package main

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/dlock-go/dlock/redistest"
)

func TestUsage(t *testing.T) {
	tests := []struct {
		name       string
		args       []string
		code       int
		stdout     string // a part of what is printed on stdout
		stderr     string // a part of what is printed on stderr
		emptyOther bool   // nothing is printed on the other stream
	}{
		{name: "no args", args: nil, code: exitUsage, stderr: "Usage: dlock"},
		{name: "unknown verb", args: []string{"frobnicate"}, code: exitUsage, stderr: `unknown command "frobnicate"`},
		{name: "unknown flag", args: []string{"--frob"}, code: exitUsage, stderr: "Usage: dlock"},
		{name: "help", args: []string{"--help"}, code: exitOK, stdout: "demo ", emptyOther: true},
		{name: "-h", args: []string{"-h"}, code: exitOK, stdout: "Usage: dlock", emptyOther: true},
		{name: "help verb", args: []string{"help"}, code: exitOK, stdout: "Commands:", emptyOther: true},
		{name: "help demo", args: []string{"help", "demo"}, code: exitOK, stdout: "Usage: dlock demo", emptyOther: true},
		{name: "version", args: []string{"--version"}, code: exitOK, stdout: "dlock ", emptyOther: true},
		{name: "demo help", args: []string{"demo", "--help"}, code: exitOK, stdout: "-redis URL", emptyOther: true},
		{name: "demo help duration", args: []string{"demo", "--help"}, code: exitOK, stdout: "It takes about 15 seconds", emptyOther: true},
		{name: "demo help redlock", args: []string{"demo", "--help"}, code: exitOK, stdout: "always runs on five embedded nodes", emptyOther: true},
		{name: "status help quorum", args: []string{"status", "--help"}, code: exitOK, stdout: "given 3 or 5 times, the independent servers of a Redlock quorum", emptyOther: true},
		{name: "demo unknown flag", args: []string{"demo", "--frob"}, code: exitUsage, stderr: "flag provided but not defined: -frob"},
		{name: "demo extra arg", args: []string{"demo", "now"}, code: exitUsage, stderr: `unexpected argument "now"`},
		{name: "demo bad timeout", args: []string{"demo", "--timeout", "0s"}, code: exitUsage, stderr: "--timeout must be positive"},
		{name: "demo flag needs value", args: []string{"demo", "--redis"}, code: exitUsage, stderr: "flag needs an argument: -redis"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, stdout, stderr := runCLI(t, tt.args...)
			if code != tt.code {
				t.Errorf("exit status %d, want %d\nstdout:\n%s\nstderr:\n%s", code, tt.code, stdout, stderr)
			}
			if !strings.Contains(stdout, tt.stdout) {
				t.Errorf("stdout does not contain %q:\n%s", tt.stdout, stdout)
			}
			if !strings.Contains(stderr, tt.stderr) {
				t.Errorf("stderr does not contain %q:\n%s", tt.stderr, stderr)
			}
			if tt.emptyOther && stderr != "" {
				t.Errorf("stderr should be empty:\n%s", stderr)
			}
		})
	}
}

// TestCommandsListed checks that the usage names every verb.
func TestCommandsListed(t *testing.T) {
	_, stdout, _ := runCLI(t, "--help")
	for _, cmd := range commands() {
		if !strings.Contains(stdout, "  "+cmd.name+" ") {
			t.Errorf("usage does not list %q:\n%s", cmd.name, stdout)
		}
	}
}

// No verb that takes --redis prints a password from it: not when the server
// cannot be reached, not when the URL does not parse, not when there are two.
func TestPasswordNotPrinted(t *testing.T) {
	t.Parallel()
	urls := []string{
		"redis://user:s3cret@127.0.0.1:1/0",
		"rediss://:s3cret@127.0.0.1:1/0",
		"redis://user:s3cret@127.0.0.1:1/x",
		"redis://127.0.0.1:1/0?password=s3cret",
		"redis://user:s3cret@127.0.0.1:1/0#s3cret",
		"redis://user:s3cret@127.0.0.1:bad/0",
		"redis://user:s3cret@[::1/0",
		"http://user:s3cret@x",
	}
	verbs := map[string]func(redis ...string) []string{
		"run":    func(r ...string) []string { return append(append([]string{"run", "--key", "k"}, r...), "--", "true") },
		"status": func(r ...string) []string { return append(append([]string{"status", "--timeout", "1s"}, r...), "k") },
		"list":   func(r ...string) []string { return append([]string{"list", "--timeout", "1s"}, r...) },
		"release": func(r ...string) []string {
			return append(append([]string{"release", "--force", "--timeout", "1s"}, r...), "k")
		},
		"check": func(r ...string) []string { return append([]string{"check", "--timeout", "1s"}, r...) },
		"demo":  func(r ...string) []string { return append([]string{"demo", "--timeout", "1s"}, r...) },
	}
	for verb, args := range verbs {
		for _, url := range urls {
			code, stdout, stderr := runCLI(t, args("--redis", url)...)
			if code == exitOK || stderr == "" {
				t.Errorf("%s --redis %s: exit status %d, stderr %q; want an error", verb, url, code, stderr)
			}
			if strings.Contains(stdout+stderr, "s3cret") {
				t.Errorf("%s --redis %s printed the password:\nstdout: %s\nstderr: %s", verb, url, stdout, stderr)
			}
		}
		if verb == "demo" { // takes one --redis only
			continue
		}
		_, stdout, stderr := runCLI(t, args("--redis", urls[0], "--redis", urls[1])...)
		if strings.Contains(stdout+stderr, "s3cret") {
			t.Errorf("%s with two --redis printed the password:\n%s%s", verb, stdout, stderr)
		}
	}

	// Redlock quorums, on servers that need a password: too few nodes
	// answer, or enough do and the others are warned about, one of them
	// for a wrong password.
	srvs := redistest.NewServers(t, 2, redistest.WithArgs("--requirepass", "s3cret"))
	up := func(s *redistest.Server) string { return "redis://default:s3cret@" + s.Addr() + "/0" }
	quorums := [][]string{
		{up(srvs[0]), urls[0], urls[1]},
		{up(srvs[0]), up(srvs[1]), urls[0]},
		{up(srvs[0]), "redis://default:wr0ng@" + srvs[1].Addr() + "/0", urls[0]},
		{up(srvs[0]), up(srvs[1]), "redis://default:s3cret@" + srvs[1].Addr() + "/1"}, // the same server twice
		{up(srvs[0]), up(srvs[1]), "rediss://default:s3cret@127.0.0.1:1/0"},
	}
	for verb, args := range verbs {
		if verb == "demo" {
			continue
		}
		for _, quorum := range quorums {
			var flags []string
			for _, url := range quorum {
				flags = append(flags, "--redis", url)
			}
			code, stdout, stderr := runCLI(t, args(flags...)...)
			if strings.Contains(stdout+stderr, "s3cret") || strings.Contains(stdout+stderr, "wr0ng") {
				t.Errorf("%s on a quorum printed a password (exit status %d):\nstdout: %s\nstderr: %s", verb, code, stdout, stderr)
			}
		}
	}
}

// TestExitStatusTable checks that dlock --help and the command's page,
// docs/cli.md, show the one table of exit statuses, and that it names every
// status dlock has.
func TestExitStatusTable(t *testing.T) {
	page, err := os.ReadFile(filepath.Join("..", "..", "docs", "cli.md"))
	if err != nil {
		t.Fatal(err)
	}
	var md strings.Builder
	md.WriteString("| exit status | meaning |\n|---|---|\n")
	for _, e := range exitStatuses {
		fmt.Fprintf(&md, "| %s | %s |\n", e.code, e.meaning)
	}
	if !strings.Contains(string(page), md.String()) {
		t.Errorf("docs/cli.md does not have the table of exit statuses that dlock --help shows; put it there:\n%s", md.String())
	}

	_, help, _ := runCLI(t, "--help")
	_, table, ok := strings.Cut(help, "\nExit status:\n")
	if !ok {
		t.Fatalf("dlock --help has no table of exit statuses:\n%s", help)
	}
	for _, e := range exitStatuses {
		if !regexp.MustCompile(`(?m)^  ` + regexp.QuoteMeta(e.code) + ` +` + regexp.QuoteMeta(wrap(e.meaning, 70)[0]) + `$`).MatchString(table) {
			t.Errorf("dlock --help has no row for %s: %s", e.code, e.meaning)
		}
	}
	for _, code := range []int{exitOK, exitFail, exitNone, exitUsage, exitUnavailable, exitNotObtained, exitLockLost, exitSlotTaken, exitCannotExecute, exitNotFound} {
		if !slices.ContainsFunc(exitStatuses, func(e struct{ code, meaning string }) bool { return e.code == strconv.Itoa(code) }) {
			t.Errorf("the table of exit statuses has no row for %d", code)
		}
	}
}

// TestFlagMistake: a flag's mistake says what is wrong and how to mend it,
// and points to --help rather than printing the whole usage.
func TestFlagMistake(t *testing.T) {
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"run", "--ttl", "10", "--key", "k", "--", "true"}, "dlock run: --ttl 10 has no unit: use a unit, e.g. 10s"},
		{[]string{"elect", "--grace", "5", "--key", "k", "--", "true"}, "dlock elect: --grace 5 has no unit: use a unit, e.g. 5s"},
		{[]string{"status", "--timeout", "soon", "k"}, `dlock status: --timeout "soon" is no duration: use a number and a unit, e.g. 10s`},
		{[]string{"list", "--frob"}, "dlock list: flag provided but not defined: -frob"},
	} {
		code, stdout, stderr := runCLI(t, tt.args...)
		if code != exitUsage || stdout != "" || !strings.HasPrefix(stderr, tt.want) {
			t.Errorf("dlock %v = %d, %q, %q; want %d and %q", tt.args, code, stdout, stderr, exitUsage, tt.want)
		}
		if want := fmt.Sprintf("\nRun 'dlock %s --help' for its flags.\n", tt.args[0]); !strings.HasSuffix(stderr, want) || strings.Contains(stderr, "Usage:") {
			t.Errorf("dlock %v printed %q; want it to end with %q, without the whole usage", tt.args, stderr, want)
		}
	}
}
