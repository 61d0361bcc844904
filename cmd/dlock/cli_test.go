package main

import (
	"strings"
	"testing"
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
