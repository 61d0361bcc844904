package main

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/dlock-go/dlock/internal/testenv"
)

// dlockBinary is the dlock program built by TestMain, for the tests that run
// it as a separate process (see runDlock). It is set once, before any test.
var dlockBinary string

// TestMain builds dlock for the tests that run it as a process, and fails
// the tests if a goroutine outlives them: the verbs must stop and wait for
// every goroutine they start, the embedded Redis's included.
func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "dlock-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	dlockBinary = filepath.Join(dir, "dlock")
	build := exec.Command("go", "build", "-o", dlockBinary, ".")
	if out, err := build.CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "go build: %v\n%s", err, out)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	quietLogs() // as main does
	goleak.VerifyTestMain(m, goleak.Cleanup(func(code int) {
		os.RemoveAll(dir)
		os.Exit(code)
	}))
}

// runCLI runs dlock with args as main would, in this process, and returns
// its exit status and what it printed. Its standard input is empty.
func runCLI(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code = run(args, nil, &out, &errOut)
	return code, out.String(), errOut.String()
}

// waitUntil polls cond until it holds, and fails the test after 10s.
func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	testenv.Eventually(t, time.Minute, what, cond) // a bound that only ends a hung test
}

// defaultHolderName is the holder name of a Client made without
// dlock.WithHolderName: the host, the pid and the program.
func defaultHolderName() string {
	host, _ := os.Hostname()
	return host + " pid " + strconv.Itoa(os.Getpid()) + " (" + filepath.Base(os.Args[0]) + ")"
}
