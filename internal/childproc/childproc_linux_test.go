//go:build linux

package childproc_test

import (
	"bufio"
	"io"
	"os/exec"
	"syscall"
	"testing"

	"github.com/dlock-go/dlock/internal/childproc"
	"github.com/dlock-go/dlock/internal/testenv"
)

// A child with a parent-death signal outlives the thread that asked for it.
func TestStartOutlivesEndingThread(t *testing.T) {
	cmd := exec.Command("cat")
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	testenv.OnEndingThread(t, func() { err = childproc.Start(cmd, func(err error) { done <- err }) })
	if err != nil {
		t.Fatal(err)
	}
	// The signal is sent as the thread exits, before it is gone from /proc:
	// a child it killed cannot answer.
	if _, err := io.WriteString(stdin, "ping\n"); err != nil {
		t.Fatalf("the child died with the thread that asked for it: %v", err)
	}
	if line, err := bufio.NewReader(stdout).ReadString('\n'); line != "ping\n" {
		t.Fatalf("the child died with the thread that asked for it: read %q, %v", line, err)
	}
	if err := stdin.Close(); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatalf("cat exited with %v, want success", err)
	}
}
