package dlockprom_test

import (
	"os"
	"strings"
	"testing"
)

// TestDocExampleCompiles checks that the code in the package's doc is the
// body of ExampleNew, which the compiler checks: the doc's example compiles
// as written.
func TestDocExampleCompiles(t *testing.T) {
	doc, err := os.ReadFile("doc.go")
	if err != nil {
		t.Fatal(err)
	}
	examples, err := os.ReadFile("example_test.go")
	if err != nil {
		t.Fatal(err)
	}
	var code []string // the first block of code in the doc, lines "//\t..."
	for line := range strings.Lines(string(doc)) {
		if rest, ok := strings.CutPrefix(line, "//\t"); ok {
			code = append(code, "\t"+rest) // as indented in a function's body
		} else if len(code) > 0 {
			break
		}
	}
	if len(code) == 0 {
		t.Fatal("doc.go shows no code")
	}
	if block := strings.Join(code, ""); !strings.Contains(string(examples), block) {
		t.Errorf("doc.go's example is not in example_test.go as written:\n%s", block)
	}
}
