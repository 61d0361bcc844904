package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"go/ast"
	"go/importer"
	"go/parser"
	"go/token"
	"go/types"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// listedPackage is the part of `go list -json` output the tool reads.
type listedPackage struct {
	ImportPath  string
	Dir         string
	GoFiles     []string
	CgoFiles    []string
	TestGoFiles []string
	ImportMap   map[string]string
	Export      string
	DepOnly     bool
	Error       *struct{ Err string }
}

// loadedPackage is a type-checked package with its syntax.
type loadedPackage struct {
	path  string
	fset  *token.FileSet
	files []*ast.File
	pkg   *types.Package
	info  *types.Info
}

// load lists the packages matching patterns, with the export data of
// everything they import, and type-checks each matching package. With
// tests, a package's own _test.go files (package p, not p_test) are
// checked with it.
func load(patterns []string, tests bool) ([]*loadedPackage, error) {
	listed, err := goList(patterns, tests)
	if err != nil {
		return nil, err
	}
	exports := make(map[string]string)
	byPath := make(map[string]*listedPackage)
	var targets []*listedPackage
	for _, lp := range listed {
		if lp.Error != nil {
			return nil, fmt.Errorf("%s: %s", lp.ImportPath, lp.Error.Err)
		}
		exports[lp.ImportPath] = lp.Export
		byPath[lp.ImportPath] = lp
		if !lp.DepOnly && !strings.Contains(lp.ImportPath, " ") && !strings.HasSuffix(lp.ImportPath, ".test") {
			targets = append(targets, lp)
		}
	}
	var pkgs []*loadedPackage
	for _, lp := range targets {
		files := append([]string(nil), lp.GoFiles...)
		if variant := byPath[lp.ImportPath+" ["+lp.ImportPath+".test]"]; tests && variant != nil {
			lp = variant
			files = append(files, lp.TestGoFiles...)
		}
		p, err := check(lp, files, exports)
		if err != nil {
			return nil, err
		}
		pkgs = append(pkgs, p)
	}
	return pkgs, nil
}

// goList runs `go list -export -deps -json` and decodes its stream.
func goList(patterns []string, tests bool) ([]*listedPackage, error) {
	args := []string{"list", "-export", "-deps", "-json"}
	if tests {
		args = append(args, "-test")
	}
	args = append(append(args, "--"), patterns...)
	cmd := exec.Command("go", args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("go list: %w: %s", err, stderr.Bytes())
	}
	var listed []*listedPackage
	dec := json.NewDecoder(&stdout)
	for {
		lp := new(listedPackage)
		err := dec.Decode(lp)
		if errors.Is(err, io.EOF) {
			return listed, nil
		}
		if err != nil {
			return nil, fmt.Errorf("go list output: %w", err)
		}
		listed = append(listed, lp)
	}
}

// check parses and type-checks one package from source, its imports from
// export data.
func check(lp *listedPackage, names []string, exports map[string]string) (*loadedPackage, error) {
	fset := token.NewFileSet()
	var files []*ast.File
	for _, name := range append(names, lp.CgoFiles...) {
		f, err := parser.ParseFile(fset, filepath.Join(lp.Dir, name), nil, parser.SkipObjectResolution)
		if err != nil {
			return nil, err
		}
		files = append(files, f)
	}
	lookup := func(path string) (io.ReadCloser, error) {
		if mapped, ok := lp.ImportMap[path]; ok {
			path = mapped
		}
		export, ok := exports[path]
		if !ok || export == "" {
			return nil, fmt.Errorf("no export data for %q", path)
		}
		return os.Open(export)
	}
	conf := types.Config{Importer: importer.ForCompiler(fset, "gc", lookup)}
	info := &types.Info{
		Uses:       make(map[*ast.Ident]types.Object),
		Defs:       make(map[*ast.Ident]types.Object),
		Selections: make(map[*ast.SelectorExpr]*types.Selection),
	}
	path, _, _ := strings.Cut(lp.ImportPath, " ")
	pkg, err := conf.Check(path, fset, files, info)
	if err != nil {
		return nil, fmt.Errorf("type-check %s: %w", lp.ImportPath, err)
	}
	return &loadedPackage{path: lp.ImportPath, fset: fset, files: files, pkg: pkg, info: info}, nil
}
