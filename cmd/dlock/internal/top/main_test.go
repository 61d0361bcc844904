package top

import (
	"testing"

	"github.com/dlock-go/dlock/internal/testenv"
)

// TestMain fails the tests if a goroutine outlives them: Watch must wait
// for the scan it started before it returns.
func TestMain(m *testing.M) {
	testenv.Main(m)
}
