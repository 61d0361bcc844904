package main

import (
	"fmt"
	"go/ast"
	"go/types"
	"io"
	"path/filepath"
	"strings"
)

// tracer follows one value through the static calls of a package.
type tracer struct {
	p       *loadedPackage
	decls   map[*types.Func]*ast.FuncDecl
	fileOf  map[*types.Func]string
	pos     map[string]int        // file base name → place in the stack
	fields  map[types.Object]bool // struct fields that hold a followed value
	entered map[*types.Func]bool
	out     io.Writer
	verbose bool
	calls   int
	climbs  int
	files   map[string]bool
	visits  []string // the file of each function entered, in order
}

// traceParam follows param of fn, named by spec, and prints the climbs
// back up.
func traceParam(out io.Writer, p *loadedPackage, g *graph, stack []int, spec string, fn *types.Func, param *types.Var, verbose bool) {
	t := &tracer{
		p: p, decls: make(map[*types.Func]*ast.FuncDecl), fileOf: make(map[*types.Func]string),
		pos: make(map[string]int), fields: make(map[types.Object]bool),
		entered: make(map[*types.Func]bool), out: out, verbose: verbose, files: make(map[string]bool),
	}
	for i, f := range stack {
		t.pos[g.files[f]] = i
	}
	for _, f := range p.files {
		name := filepath.Base(p.fset.File(f.Pos()).Name())
		for _, d := range f.Decls {
			if fd, ok := d.(*ast.FuncDecl); ok && fd.Body != nil {
				if obj, ok := p.info.Defs[fd.Name].(*types.Func); ok {
					t.decls[obj], t.fileOf[obj] = fd, name
				}
			}
		}
	}
	fmt.Fprintf(out, "  trace %s: following %s\n", spec, param.Name())
	t.enter(fn, map[types.Object]bool{param: true}, 0)
	fmt.Fprintf(out, "  trace %s: %d functions entered in %d files, %d calls between files, %d climbs back up\n",
		spec, len(t.entered), len(t.files), t.calls, t.climbs)
	walk, up := t.walk()
	fmt.Fprintf(out, "  trace %s: files in the order entered, %d moves up (returns included): %s\n",
		spec, up, strings.Join(walk, " → "))
}

// walk returns the files of the functions entered, in the order entered,
// with repeats of the same file merged, and counts the steps from one file
// to a file above it, whether by a call or after a return.
func (t *tracer) walk() ([]string, int) {
	var walk []string
	up := 0
	for _, f := range t.visits {
		f = strings.TrimSuffix(f, ".go")
		if n := len(walk); n > 0 && walk[n-1] == f {
			continue
		}
		if n := len(walk); n > 0 && t.pos[f+".go"] < t.pos[walk[n-1]+".go"] {
			up++
		}
		walk = append(walk, f)
	}
	return walk, up
}

// findParam resolves a trace spec to a function of pkg and one of its
// parameters.
func findParam(pkg *types.Package, spec string) (*types.Func, *types.Var, error) {
	at := strings.LastIndex(spec, ":")
	if at < 0 {
		return nil, nil, fmt.Errorf("trace %q: want Func:param", spec)
	}
	name, paramName := spec[:at], spec[at+1:]
	name = strings.NewReplacer("(", "", ")", "", "*", "").Replace(name)
	var fn *types.Func
	if typ, method, ok := strings.Cut(name, "."); ok {
		tn, _ := pkg.Scope().Lookup(typ).(*types.TypeName)
		if tn == nil {
			return nil, nil, fmt.Errorf("trace %q: no type %s in %s", spec, typ, pkg.Path())
		}
		obj, _, _ := types.LookupFieldOrMethod(types.NewPointer(tn.Type()), false, pkg, method)
		fn, _ = obj.(*types.Func)
	} else {
		fn, _ = pkg.Scope().Lookup(name).(*types.Func)
	}
	if fn == nil {
		return nil, nil, fmt.Errorf("trace %q: no function %s in %s", spec, name, pkg.Path())
	}
	params := fn.Signature().Params()
	for i := range params.Len() {
		if params.At(i).Name() == paramName {
			return fn, params.At(i), nil
		}
	}
	return nil, nil, fmt.Errorf("trace %q: %s has no parameter %s", spec, name, paramName)
}

// enter walks the body of fn, in which the objects of followed hold the
// value, and enters the calls that pass it on.
func (t *tracer) enter(fn *types.Func, followed map[types.Object]bool, depth int) {
	t.entered[fn] = true
	decl := t.decls[fn]
	file := t.fileOf[fn]
	t.files[file] = true
	t.visits = append(t.visits, file)
	t.spread(decl.Body, followed)
	ast.Inspect(decl.Body, func(n ast.Node) bool {
		call, ok := n.(*ast.CallExpr)
		if !ok {
			return true
		}
		callee, params := t.calleeParams(call, followed)
		if callee == nil || t.entered[callee] || t.decls[callee] == nil {
			return true
		}
		to := t.fileOf[callee]
		mark := ""
		if to != file {
			t.calls++
			if t.pos[to] < t.pos[file] {
				t.climbs++
				mark = "  ↑ climb"
			}
		}
		if t.verbose {
			fmt.Fprintf(t.out, "    %s%s (%s)%s\n", strings.Repeat("  ", depth), objName(callee, nil), to, mark)
		}
		t.enter(callee, params, depth+1)
		return true
	})
}

// calleeParams returns the function of the package a call enters when it
// passes a followed value, with the callee's parameters that receive it.
func (t *tracer) calleeParams(call *ast.CallExpr, followed map[types.Object]bool) (*types.Func, map[types.Object]bool) {
	var id *ast.Ident
	var recvExpr ast.Expr
	switch f := ast.Unparen(call.Fun).(type) {
	case *ast.Ident:
		id = f
	case *ast.SelectorExpr:
		id, recvExpr = f.Sel, f.X
	case *ast.IndexExpr: // an instantiated generic function
		id, _ = f.X.(*ast.Ident)
	}
	if id == nil {
		return nil, nil
	}
	callee, ok := t.p.info.Uses[id].(*types.Func)
	if !ok || callee.Pkg() != t.p.pkg {
		return nil, nil
	}
	callee = callee.Origin()
	sig := callee.Signature()
	params := make(map[types.Object]bool)
	for i, arg := range call.Args {
		if !t.mentions(arg, followed) || sig.Params().Len() == 0 {
			continue
		}
		params[sig.Params().At(min(i, sig.Params().Len()-1))] = true
	}
	if recvExpr != nil && sig.Recv() != nil && t.mentions(recvExpr, followed) {
		params[sig.Recv()] = true
	}
	if len(params) == 0 {
		return nil, nil
	}
	return callee, params
}

// mentions reports whether an expression reads a followed value.
func (t *tracer) mentions(e ast.Node, followed map[types.Object]bool) bool {
	found := false
	ast.Inspect(e, func(n ast.Node) bool {
		if id, ok := n.(*ast.Ident); ok {
			obj := t.p.info.Uses[id]
			if followed[obj] || t.fields[obj] {
				found = true
			}
		}
		return !found
	})
	return found
}

// spread adds to followed every variable, and to t.fields every struct
// field, that the body assigns from an expression mentioning a followed
// value, until nothing more is added.
func (t *tracer) spread(body *ast.BlockStmt, followed map[types.Object]bool) {
	for grew := true; grew; {
		grew = false
		mark := func(lhs ast.Expr) {
			var obj types.Object
			var isField bool
			switch l := ast.Unparen(lhs).(type) {
			case *ast.Ident:
				obj = t.p.info.Defs[l]
				if obj == nil {
					obj = t.p.info.Uses[l]
				}
			case *ast.SelectorExpr:
				obj, isField = t.p.info.Uses[l.Sel], true
			}
			if obj == nil || followed[obj] || t.fields[obj] {
				return
			}
			if isField {
				t.fields[obj] = true
			} else {
				followed[obj] = true
			}
			grew = true
		}
		ast.Inspect(body, func(n ast.Node) bool {
			switch s := n.(type) {
			case *ast.AssignStmt:
				t.spreadAssign(s.Lhs, s.Rhs, followed, mark)
			case *ast.ValueSpec:
				lhs := make([]ast.Expr, len(s.Names))
				for i, name := range s.Names {
					lhs[i] = name
				}
				t.spreadAssign(lhs, s.Values, followed, mark)
			case *ast.KeyValueExpr:
				if key, ok := s.Key.(*ast.Ident); ok && t.mentions(s.Value, followed) {
					if v, ok := t.p.info.Uses[key].(*types.Var); ok && v.IsField() {
						mark(&ast.SelectorExpr{X: key, Sel: key})
					}
				}
			}
			return true
		})
	}
}

// spreadAssign marks the left-hand sides fed by a right-hand side that
// mentions a followed value (all of them when one call feeds several).
func (t *tracer) spreadAssign(lhs, rhs []ast.Expr, followed map[types.Object]bool, mark func(ast.Expr)) {
	if len(rhs) == 0 {
		return
	}
	for i, l := range lhs {
		r := rhs[0]
		if len(rhs) == len(lhs) {
			r = rhs[i]
		}
		if t.mentions(r, followed) {
			mark(l)
		}
	}
}
