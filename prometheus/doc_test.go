package dlockprom_test

import (
	"testing"

	"github.com/dlock-go/dlock/internal/testenv"
)

// TestDocExampleCompiles checks that the code in the package's doc is the
// body of ExampleNew, which the compiler checks: the doc's example compiles
// as written.
func TestDocExampleCompiles(t *testing.T) {
	testenv.DocCodeIsTested(t, 1)
}
