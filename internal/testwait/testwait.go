// Package testwait is the wait of the tests of the modules beside dlock's
// (otel, prometheus) that do not use testenv yet.
//
// Deprecated: use testenv.Eventually.
package testwait

import (
	"testing"
	"time"

	"github.com/dlock-go/dlock/internal/testenv"
)

// Until fails the test unless cond becomes true within d, polling it every
// 5 milliseconds. what says what was awaited, for the failure.
//
// Deprecated: use testenv.Eventually.
func Until(t testing.TB, d time.Duration, what string, cond func() bool) {
	t.Helper()
	testenv.Eventually(t, d, what, cond)
}
