package testwatch

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// NoMount in a test's doc comment tells Unarmed the test mounts nothing.
const NoMount = "testwatch: mounts nothing"

// Unarmed scans the test files of the package in dir and returns the tests
// and benchmarks that mount without a watchdog: those that reach — directly
// or through functions of those files — a mount (a call of Mount, or the
// string "mount" as an argument of a call or the first element of a
// literal: `oxyfs mount`, `mount -t fuse.oxyfs`, run(ctx, []string{"mount",
// …})) but no call of Arm. A function that takes or builds a mount for
// another (a helper) is followed by name, methods included, so the
// helpers are where Arm belongs. A test whose doc comment says
// "testwatch: mounts nothing" (one that only parses a mount's flags, say)
// is not counted.
//
// A call of syscall.Mount or unix.Mount (a kernel filesystem such as a
// tmpfs, which no daemon of the test serves) is not a mount here.
func Unarmed(dir string) ([]string, error) { return unarmed(dir, false) }

// UnarmedThrough is Unarmed for a package whose tests mount through its
// own functions (testkit/sim: Run mounts when Config.MountPercent > 0):
// the functions of its non-test files are followed too, as callees only.
func UnarmedThrough(dir string) ([]string, error) { return unarmed(dir, true) }

func unarmed(dir string, sources bool) ([]string, error) {
	pattern := "*_test.go"
	if sources {
		pattern = "*.go"
	}
	files, err := filepath.Glob(filepath.Join(dir, pattern))
	if err != nil {
		return nil, fmt.Errorf("scan %s: %w", dir, err)
	}
	fset := token.NewFileSet()
	type fn struct {
		calls         []string
		mounts, arms  bool
		test          bool
		name, display string
	}
	funcs := map[string]*fn{}
	var order []*fn
	for _, p := range files {
		f, err := parser.ParseFile(fset, p, nil, parser.ParseComments)
		if err != nil {
			return nil, fmt.Errorf("scan %s: %w", p, err)
		}
		for _, d := range f.Decls {
			fd, ok := d.(*ast.FuncDecl)
			if !ok || fd.Body == nil {
				continue
			}
			x := &fn{name: fd.Name.Name, display: fd.Name.Name}
			x.test = strings.HasSuffix(p, "_test.go") && fd.Recv == nil && (strings.HasPrefix(x.name, "Test") || strings.HasPrefix(x.name, "Benchmark")) && x.name != "TestMain" &&
				!(fd.Doc != nil && strings.Contains(fd.Doc.Text(), NoMount))
			scanBody(fd.Body, func(call string) { x.calls = append(x.calls, call) }, &x.mounts, &x.arms)
			if prev := funcs[x.name]; prev != nil {
				// Methods of different types with one name: merged, so
				// a call by that name is followed into both.
				prev.calls = append(prev.calls, x.calls...)
				prev.mounts = prev.mounts || x.mounts
				prev.arms = prev.arms || x.arms
				prev.test = prev.test || x.test
				continue
			}
			funcs[x.name] = x
			order = append(order, x)
		}
	}
	// reach reports whether f, or a function it calls, has the property.
	reach := func(f *fn, has func(*fn) bool) bool {
		seen := map[*fn]bool{}
		var walk func(*fn) bool
		walk = func(f *fn) bool {
			if seen[f] {
				return false
			}
			seen[f] = true
			if has(f) {
				return true
			}
			for _, c := range f.calls {
				if g := funcs[c]; g != nil && walk(g) {
					return true
				}
			}
			return false
		}
		return walk(f)
	}
	var bad []string
	for _, f := range order {
		if !f.test {
			continue
		}
		if reach(f, func(g *fn) bool { return g.mounts }) && !reach(f, func(g *fn) bool { return g.arms }) {
			bad = append(bad, f.display)
		}
	}
	slices.Sort(bad)
	return bad, nil
}

// scanBody notes the calls a body makes by name, whether it mounts and
// whether it arms a watchdog (closures included).
func scanBody(body *ast.BlockStmt, call func(string), mounts, arms *bool) {
	isMount := func(e ast.Expr) bool {
		bl, ok := e.(*ast.BasicLit)
		if !ok || bl.Kind != token.STRING {
			return false
		}
		s, err := strconv.Unquote(bl.Value)
		return err == nil && s == "mount"
	}
	ast.Inspect(body, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.CallExpr:
			var name string
			switch f := n.Fun.(type) {
			case *ast.Ident:
				name = f.Name
			case *ast.SelectorExpr:
				name = f.Sel.Name
				if pkg, ok := f.X.(*ast.Ident); ok && pkg.Name == "testwatch" && name == "Arm" {
					*arms = true
				}
				if pkg, ok := f.X.(*ast.Ident); ok && (pkg.Name == "syscall" || pkg.Name == "unix") && name == "Mount" {
					name = "" // a kernel filesystem: no daemon to hang on
				}
			}
			if name == "Mount" {
				*mounts = true
			}
			if name != "" {
				call(name)
			}
			for _, a := range n.Args {
				if isMount(a) {
					*mounts = true
				}
			}
		case *ast.CompositeLit:
			if len(n.Elts) > 0 && isMount(n.Elts[0]) {
				*mounts = true
			}
		}
		return true
	})
}
