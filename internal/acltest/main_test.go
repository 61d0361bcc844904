package acltest

import (
	"testing"

	"github.com/dlock-go/dlock/internal/testenv"
)

func TestMain(m *testing.M) {
	testenv.Main(m, testenv.IgnoreRedial())
}
