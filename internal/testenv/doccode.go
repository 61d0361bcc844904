package testenv

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// DocCodeIsTested fails t unless the first n blocks of code of the package
// comment in doc.go stand, as written but for their indentation, in one of
// the *_test.go files beside it, where the compiler checks them: the code a
// package's documentation shows compiles. It reads the directory the test
// runs in, the package's own.
func DocCodeIsTested(t testing.TB, n int) {
	t.Helper()
	doc, err := os.ReadFile("doc.go")
	if err != nil {
		t.Fatal(err)
	}
	blocks := docBlocks(string(doc))
	if len(blocks) < n {
		t.Fatalf("doc.go shows %d blocks of code, want %d at least", len(blocks), n)
	}
	files, err := filepath.Glob("*_test.go")
	if err != nil {
		t.Fatal(err)
	}
	var tests strings.Builder
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		tests.Write(b)
		tests.WriteByte('\n')
	}
	code := trimLines(tests.String())
	for _, block := range blocks[:n] {
		if !strings.Contains(code, trimLines(block)) {
			t.Errorf("this code of doc.go stands in no *_test.go file, so nothing compiles it:\n%s", block)
		}
	}
}

// docBlocks returns the blocks of code of a Go file's comments: runs of
// lines "//\t...", blank comment lines inside a run included.
func docBlocks(src string) []string {
	var blocks []string
	var block []string
	end := func() {
		for len(block) > 0 && block[len(block)-1] == "" {
			block = block[:len(block)-1]
		}
		if len(block) > 0 {
			blocks = append(blocks, strings.Join(block, "\n"))
		}
		block = nil
	}
	for line := range strings.Lines(src) {
		line = strings.TrimRight(line, "\n")
		switch rest, ok := strings.CutPrefix(line, "//\t"); {
		case ok:
			block = append(block, rest)
		case line == "//" && len(block) > 0:
			block = append(block, "")
		default:
			end()
		}
	}
	end()
	return blocks
}

// trimLines trims every line of s, so that code compares whatever its
// indentation.
func trimLines(s string) string {
	lines := strings.Split(s, "\n")
	for i, line := range lines {
		lines[i] = strings.TrimSpace(line)
	}
	return strings.Join(lines, "\n")
}
