//go:build !unix

package redistest

import (
	"errors"
	"os"
	"runtime"
)

// errNoStop is returned where SIGSTOP and SIGCONT do not exist.
var errNoStop = errors.New("pausing a process is not supported on " + runtime.GOOS)

// stopProcess fails: the system has no SIGSTOP.
func stopProcess(*os.Process) error {
	return errNoStop
}

// continueProcess fails: the system has no SIGCONT.
func continueProcess(*os.Process) error {
	return errNoStop
}
