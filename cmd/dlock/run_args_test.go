package main

import (
	"strings"
	"testing"
)

// TestRunUsage checks the run verb's mistakes that need no Redis, and one
// that needs an unreachable one. It runs dlock in this process.
func TestRunUsage(t *testing.T) {
	t.Parallel()
	const dashes = "put -- before the command, as in: dlock run --key nightly -- /usr/local/bin/report"
	tests := []struct {
		name   string
		args   []string
		code   int
		stderr string // a part of what is printed on stderr
	}{
		{"nothing", []string{"run"}, exitUsage, "dlock run: no command given; put it after --, as in: dlock run --key nightly -- /usr/local/bin/report\n"},
		{"no dashes", []string{"run", "--key", "k", "echo", "hi"}, exitUsage, "dlock run: " + dashes + "\n"},
		{"no command", []string{"run", "--key", "k", "--"}, exitUsage, "dlock run: no command after --"},
		{"no key", []string{"run", "--", "echo", "hi"}, exitUsage, "dlock run: --key is required: name the lock, as in: "},
		{"empty key", []string{"run", "--key", "", "--", "echo"}, exitUsage, "--key is required"},
		{"empty key of several", []string{"run", "--key", "a", "--key", "", "--", "echo"}, exitUsage, "--key must not be empty"},
		{"several keys and fair", []string{"run", "--key", "a", "--key", "b", "--fair", "--", "echo"}, exitUsage, "take one --key, not several"},
		{"several keys and limit", []string{"run", "--key", "a", "--key", "b", "--limit", "2", "--", "echo"}, exitUsage, "take one --key, not several"},
		{"argument before dashes", []string{"run", "--key", "k", "now", "--", "echo"}, exitUsage, `unexpected argument "now" before --`},
		{"unknown flag", []string{"run", "--frob", "--", "echo"}, exitUsage, "dlock run: flag provided but not defined: -frob\n"},
		{"bad duration", []string{"run", "--ttl", "soon", "--key", "k", "--", "echo"}, exitUsage, `dlock run: --ttl "soon" is no duration: use a number and a unit, e.g. 10s`},
		{"short ttl", []string{"run", "--ttl", "10ms", "--key", "k", "--", "echo"}, exitUsage, "--ttl must be at least 100ms, not 10ms"},
		{"negative wait", []string{"run", "--wait", "-1s", "--key", "k", "--", "echo"}, exitUsage, "--wait must not be negative"},
		{"negative min-hold", []string{"run", "--min-hold", "-1s", "--key", "k", "--", "echo"}, exitUsage, "--min-hold must not be negative"},
		{"negative grace", []string{"run", "--grace", "-1s", "--key", "k", "--", "echo"}, exitUsage, "--grace must not be negative"},
		{"exit code too large", []string{"run", "--conflict-exit-code", "256", "--key", "k", "--", "echo"}, exitUsage, "--conflict-exit-code must be from 0 to 255, not 256"},
		{"negative once-per", []string{"run", "--once-per", "-1h", "--key", "k", "--", "echo"}, exitUsage, "--once-per must not be negative, not -1h0m0s"},
		{"once-per and wait", []string{"run", "--once-per", "1h", "--wait", "1m", "--key", "k", "--", "echo"}, exitUsage, "--once-per does not go with --wait, --min-hold or --fair"},
		{"once-per and min-hold", []string{"run", "--once-per", "1h", "--min-hold", "1m", "--key", "k", "--", "echo"}, exitUsage, "--once-per does not go with"},
		{"once-per and fair", []string{"run", "--once-per", "1h", "--fair", "--key", "k", "--", "echo"}, exitUsage, "--once-per does not go with"},
		{"bad URL", []string{"run", "--key", "k", "--redis", "http://x", "--", "echo"}, exitUsage, "dlock: bad --redis URL (not shown, as it may hold a password): it does not start with redis://, rediss:// or unix://; want redis://"},
		{"fair quorum", []string{"run", "--fair", "--key", "k", "--redis", "redis://a:1", "--redis", "redis://b:2", "--redis", "redis://c:3", "--", "echo"}, exitUsage,
			"dlock run: --fair needs a single Redis deployment: several --redis URLs make a Redlock quorum,\nwhich has no arrival-order queue; drop --fair, or give one URL\n"},
		{"URL twice", []string{"run", "--key", "k", "--redis", "redis://a:1", "--redis", "redis://b:2", "--redis", "redis://a:1", "--", "echo"}, exitUsage,
			"dlock: --redis redis://a:1 is given twice; the nodes of a Redlock quorum must be distinct, independent servers\n"},
		{"quorum unreachable", []string{"run", "--key", "k", "--redis", "redis://127.0.0.1:1/0", "--redis", "redis://127.0.0.1:2/0", "--", "echo"}, exitUnavailable,
			"dlock: only 0 of the 2 Redis nodes answered, and a Redlock quorum needs 2:\n" +
				"  cannot reach redis at redis://127.0.0.1:1/0: dial tcp 127.0.0.1:1: connect: connection refused\n" +
				"  cannot reach redis at redis://127.0.0.1:2/0: dial tcp 127.0.0.1:2: connect: connection refused\n" +
				"dlock: is redis-server running, and is --redis right?\n"},
		{"unreachable", []string{"run", "--key", "k", "--redis", "redis://127.0.0.1:1/0", "--", "echo"}, exitUnavailable,
			"dlock: cannot reach redis at redis://127.0.0.1:1/0: dial tcp 127.0.0.1:1: connect: connection refused; is redis-server running, and is --redis right?\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, stdout, stderr := runCLI(t, tt.args...)
			if code != tt.code || !strings.Contains(stderr, tt.stderr) || stdout != "" {
				t.Errorf("exit status %d, want %d; stderr does not contain %q, or stdout is not empty\nstdout:\n%s\nstderr:\n%s",
					code, tt.code, tt.stderr, stdout, stderr)
			}
		})
	}
}

// TestRunHelp checks that the help of the run verb explains what a cron
// user needs.
func TestRunHelp(t *testing.T) {
	code, stdout, stderr := runCLI(t, "run", "--help")
	if code != exitOK || stderr != "" {
		t.Fatalf("exit status %d, stderr %q; want 0 and nothing", code, stderr)
	}
	for _, want := range []string{
		"Usage: dlock run --key KEY [flags] -- COMMAND [ARGS...]",
		"0 2 * * * dlock run --key nightly-report --min-hold 5m -- /usr/local/bin/report",
		"-conflict-exit-code", "-fair", "-grace", "-key KEY", "-min-hold", "-redis URL", "-ttl", "-v", "-wait",
		"lock in the order they arrived", "renewed every third of --ttl", "not those that succeed",
		"Several --redis URLs", "make a Redlock quorum", "--fair needs a single server", "the same server twice",
		"DLOCK_KEY", "DLOCK_TOKEN", "DLOCK_FENCE", "DLOCK_REDIS ", "DLOCK_REDIS_PASSWORD",
		"-once-per period", "once per slot", "DLOCK_SLOT", "--once-per 24h",
		"\n  75 ", "\n  76 ", "\n  79 ", "\n  64 ", "\n  69 ", "128+N",
		"At least 100ms, though the library takes 1ms", // and why
	} {
		if !strings.Contains(stdout, want) {
			t.Errorf("the help does not contain %q", want)
		}
	}
	if t.Failed() {
		t.Log(stdout)
	}
	if _, helpRun, _ := runCLI(t, "help", "run"); helpRun != stdout {
		t.Error(`"dlock help run" differs from "dlock run --help"`)
	}
}
