package dlock_test

import (
	"bufio"
	"go/ast"
	"go/doc"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// The root package exports exactly the names listed in testdata/api.txt,
// so that its surface grows only on purpose: a new export fails this test
// until it is added to the list (and to the CHANGELOG). A name is counted
// as go doc shows it: each constant and variable, each function, each type,
// and each method of an exported type as Type.Method.
func TestExportedNames(t *testing.T) {
	want := readNames(t, "testdata/api.txt")
	got := exportedNames(t, ".")
	if dup := duplicates(want); len(dup) > 0 {
		t.Errorf("testdata/api.txt lists %v more than once", dup)
	}
	for _, n := range got {
		if !slices.Contains(want, n) {
			t.Errorf("%s is exported but not in testdata/api.txt", n)
		}
	}
	for _, n := range want {
		if !slices.Contains(got, n) {
			t.Errorf("%s is in testdata/api.txt but not exported", n)
		}
	}
	if len(got) > maxExported {
		t.Errorf("the root exports %d names, over %d", len(got), maxExported)
	}
}

// maxExported bounds the root's surface: what a user calls. redislock
// exports about 23 names, redsync 42, etcd's concurrency package 30.
const maxExported = 90

// exportedNames returns the sorted exported names of the package in dir,
// as go doc shows them, without its tests.
func exportedNames(t *testing.T, dir string) []string {
	t.Helper()
	fset := token.NewFileSet()
	paths, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		t.Fatal(err)
	}
	var files []*ast.File
	for _, path := range paths {
		if strings.HasSuffix(path, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, path, nil, parser.ParseComments)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, f)
	}
	d, err := doc.NewFromFiles(fset, files, "github.com/dlock-go/dlock")
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	values := func(vs []*doc.Value) {
		for _, v := range vs {
			for _, n := range v.Names {
				if ast.IsExported(n) {
					names = append(names, n)
				}
			}
		}
	}
	values(d.Consts)
	values(d.Vars)
	for _, f := range d.Funcs {
		names = append(names, f.Name)
	}
	for _, typ := range d.Types {
		names = append(names, typ.Name)
		values(typ.Consts)
		values(typ.Vars)
		for _, f := range typ.Funcs {
			names = append(names, f.Name)
		}
		for _, m := range typ.Methods {
			names = append(names, typ.Name+"."+m.Name)
		}
	}
	slices.Sort(names)
	return names
}

// readNames reads a list of names, one a line; blank lines and lines that
// start with # are left out.
func readNames(t *testing.T, path string) []string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var names []string
	s := bufio.NewScanner(f)
	for s.Scan() {
		line := strings.TrimSpace(s.Text())
		if line != "" && !strings.HasPrefix(line, "#") {
			names = append(names, line)
		}
	}
	if err := s.Err(); err != nil {
		t.Fatal(err)
	}
	return names
}

// duplicates returns the names listed more than once.
func duplicates(names []string) []string {
	seen := map[string]bool{}
	var dup []string
	for _, n := range names {
		if seen[n] {
			dup = append(dup, n)
		}
		seen[n] = true
	}
	return dup
}

// No package under internal/ imports the root: the engine and the helpers
// stand beneath the API, which uses them, never the other way round. Test
// files count too (an internal test of the engine cannot import the root).
func TestInternalDoesNotImportRoot(t *testing.T) {
	const root = `"github.com/dlock-go/dlock"`
	err := filepath.WalkDir("internal", func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") {
			return err
		}
		if strings.HasPrefix(path, filepath.Join("internal", "testenv", "lockenv")) {
			return nil // the tests' Locker: a helper of the packages above the root
		}
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		for _, imp := range f.Imports {
			if imp.Path.Value == root {
				t.Errorf("%s imports the root package", path)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
