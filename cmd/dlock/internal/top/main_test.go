package top

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the tests if a goroutine outlives them: Watch must wait
// for the scan it started before it returns.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
