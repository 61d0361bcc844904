package childproc_test

import (
	"errors"
	"os/exec"
	"testing"

	"github.com/dlock-go/dlock/internal/childproc"
)

// Start reports a command that cannot start, and does not call exited.
func TestStartFails(t *testing.T) {
	cmd := exec.Command("/nonexistent/childproc-test")
	err := childproc.Start(cmd, func(error) { t.Error("exited called for a command that never started") })
	if err == nil {
		t.Fatal("Start of a missing binary succeeded")
	}
}

// exited gets the command's exit, once, after it ends.
func TestStartExited(t *testing.T) {
	done := make(chan error, 1)
	if err := childproc.Start(exec.Command("sh", "-c", "exit 3"), func(err error) { done <- err }); err != nil {
		t.Fatal(err)
	}
	var exit *exec.ExitError
	if err := <-done; !errors.As(err, &exit) || exit.ExitCode() != 3 {
		t.Fatalf("exited got %v, want exit status 3", err)
	}
}
