package main

import (
	"bytes"
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the tests if a goroutine outlives them: the demo must stop
// and wait for every goroutine it starts, the embedded Redis's included.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// runCLI runs dlock with args as main would, and returns its exit status
// and what it printed.
func runCLI(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code = run(args, &out, &errOut)
	return code, out.String(), errOut.String()
}
