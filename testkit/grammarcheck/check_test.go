package grammarcheck

import (
	"fmt"
	"go/ast"
	"go/constant"
	"go/parser"
	"go/token"
	"hash/fnv"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/oxyfs/oxyfs/index"
	"github.com/oxyfs/oxyfs/store/format"
)

const (
	storePkg  = "github.com/oxyfs/oxyfs/store"
	formatPkg = "github.com/oxyfs/oxyfs/store/format"
	keyOwner  = "store/" // and store/storetest/
	pathOwn   = "index/"
)

// pathConsumers take tree paths; index reads them.
var pathConsumers = []string{"fs/", "web/", "cmd/"}

// keyNames are the first segments of keys: the kinds and the older
// one-list directories.
var keyNames = func() map[string]bool {
	m := map[string]bool{}
	for _, k := range format.Kinds {
		m[k.String()] = true
		m[strings.TrimSuffix(format.LegacyLists()[k].Prefix, "/")] = true
	}
	return m
}()

// fnvConsts are the FNV-64 offset basis and prime the inode numbers use.
var fnvConsts = []uint64{fnv.New64a().Sum64(), 1099511628211}

// keyReaders are store's key readers, by name in lower case: declared
// outside store/ they are a copy. Path consumers call none of the exported ones.
var keyReaders = names("splitKey", "splitKeyPacked", "ParseKey", "ParseKind", "kindOf", "ValidValue",
	"ValidateValue", "validObjectHex", "ValidObjectID", "ValidateObject", "DecodeObjectID", "ParseHH",
	"hexByteOf", "packObj", "ParseLegacyKey")

// pathReaders are index's path readers, by name in lower case.
var pathReaders = names("ParsePath", "PathIno", "ChildIno", "inoOf", "SplitPath",
	"JoinPath", "objectPath", "linkTarget", "ParseEntryPath")

// splitFuncs are the strings and bytes functions that split or search.
var splitFuncs = names("Split", "SplitN", "SplitAfter", "SplitAfterN", "SplitSeq", "SplitAfterSeq",
	"Cut", "Index", "IndexByte", "IndexRune", "LastIndex", "LastIndexByte", "Count")

// allowedSplits are the functions of a path consumer that may split on
// '/', file:function, each with why it reads no grammar.
var allowedSplits = map[string]string{
	"web/pages.go:breadcrumbs": "one link per segment of the URL path; no segment is given a meaning",
	"web/server.go:escapePath": "escapes each segment of a URL path",
	// Host paths, not keys: safeDir walks a path of this machine one
	// directory at a time without following links, as the kernel does.
	"cmd/oxyfs/safepath_unix.go:safeDir":    "walks a host path component by component (Lstat each); no key",
	"cmd/oxyfs/safepath_unix.go:parentDir":  "the parent of a host directory safeDir reached; no key",
	"cmd/oxyfs/logfile_unix.go:openLogFile": "splits a host path into its folder (checked by safeDir) and file name; no key",
}

func names(ns ...string) map[string]bool {
	m := map[string]bool{}
	for _, n := range ns {
		m[strings.ToLower(n)] = true
	}
	return m
}

// finding is one place that reads the grammar outside its owner.
type finding struct {
	pos, rule, what string
}

func (f finding) String() string { return f.pos + ": " + f.rule + ": " + f.what }

func under(rel string, dirs ...string) bool {
	for _, d := range dirs {
		if strings.HasPrefix(rel, d) {
			return true
		}
	}
	return false
}

// checkFile returns what the file rel (slash path from the module root)
// does against the rules of the package doc.
func checkFile(rel string, src []byte) ([]finding, error) {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, rel, src, parser.SkipObjectResolution)
	if err != nil {
		return nil, err
	}
	var out []finding
	add := func(n ast.Node, rule, format string, args ...any) {
		p := fset.Position(n.Pos())
		out = append(out, finding{fmt.Sprintf("%s:%d", rel, p.Line), rule, fmt.Sprintf(format, args...)})
	}
	imports := map[string]string{} // local name -> import path
	for _, is := range f.Imports {
		p, _ := strconv.Unquote(is.Path.Value)
		name := path.Base(p)
		if is.Name != nil {
			name = is.Name.Name
		}
		imports[name] = p
	}
	consumer := under(rel, pathConsumers...)
	pkgOf := func(e ast.Expr) string {
		if id, ok := e.(*ast.Ident); ok {
			return imports[id.Name]
		}
		return ""
	}
	visit := func(fn string) func(ast.Node) bool {
		return func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.FuncDecl:
				name := strings.ToLower(n.Name.Name)
				if keyReaders[name] && !under(rel, keyOwner) {
					add(n, "copy of a key reader", "declares %s, which store owns", n.Name.Name)
				}
				if pathReaders[name] && !under(rel, pathOwn) {
					add(n, "copy of a path reader", "declares %s, which index owns", n.Name.Name)
				}
			case *ast.BasicLit:
				checkLit(rel, n, add)
			case *ast.SelectorExpr:
				if pkg := pkgOf(n.X); consumer && (pkg == storePkg || pkg == formatPkg) && keyReaders[strings.ToLower(n.Sel.Name)] {
					add(n, "key reader in a path consumer", "calls %s.%s; index reads tree paths", path.Base(pkg), n.Sel.Name)
				}
			case *ast.CallExpr:
				sel, ok := n.Fun.(*ast.SelectorExpr)
				if !ok || !consumer || !splitFuncs[strings.ToLower(sel.Sel.Name)] {
					break
				}
				if p := pkgOf(sel.X); p != "strings" && p != "bytes" {
					break
				}
				for _, a := range n.Args {
					if l, ok := a.(*ast.BasicLit); ok && (l.Value == `"/"` || l.Value == `'/'`) {
						if _, ok := allowedSplits[rel+":"+fn]; !ok {
							add(n, "slash splitting in a path consumer", "%s.%s on '/' in %s", pkgOf(sel.X), sel.Sel.Name, fn)
						}
					}
				}
			}
			return true
		}
	}
	for _, d := range f.Decls {
		fn := ""
		if fd, ok := d.(*ast.FuncDecl); ok {
			fn = fd.Name.Name
		}
		ast.Inspect(d, visit(fn))
	}
	return out, nil
}

// checkLit applies the literal rules: key text, tree names, inode constants.
func checkLit(rel string, l *ast.BasicLit, add func(ast.Node, string, string, ...any)) {
	switch l.Kind {
	case token.INT:
		v, ok := constant.Uint64Val(constant.MakeFromLiteral(l.Value, token.INT, 0))
		if ok && slices.Contains(fnvConsts, v) && !under(rel, pathOwn) {
			add(l, "inode numbers outside index", "FNV-64 constant %s", l.Value)
		}
	case token.STRING:
		s, err := strconv.Unquote(l.Value)
		if err != nil || strings.ContainsAny(s, " \t\r\n") {
			return
		}
		segs := strings.Split(s, "/")
		if len(segs) > 1 && !under(rel, keyOwner) && slices.ContainsFunc(segs, func(seg string) bool { return keyNames[seg] }) {
			add(l, "key text outside store", "literal %s", l.Value)
		}
		if slices.Contains(segs, index.BySigner) && !under(rel, pathOwn) {
			add(l, "tree name outside index", "literal %s", l.Value)
		}
	}
}

// moduleRoot is the directory of go.mod above the test's directory.
func moduleRoot(t *testing.T) string {
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("no go.mod above the test")
		}
		dir = parent
	}
}

// TestOneGrammar checks every non-test Go file of the module.
func TestOneGrammar(t *testing.T) {
	root := moduleRoot(t)
	var files []string
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() {
			if p != root && (name == "testdata" || name == "vendor" || strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_")) {
				return filepath.SkipDir
			}
			return nil
		}
		if strings.HasSuffix(name, ".go") && !strings.HasSuffix(name, "_test.go") {
			rel, err := filepath.Rel(root, p)
			files = append(files, filepath.ToSlash(rel))
			return err
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	// The walk must have found the owners and their consumers, or it checked nothing.
	for _, want := range []string{"store/format/keysplit.go", "index/path.go", "fs/tree.go", "web/server.go", "cmd/oxyfs/browse.go"} {
		if !slices.Contains(files, want) {
			t.Fatalf("the walk of %s did not find %s (%d files)", root, want, len(files))
		}
	}
	for _, rel := range files {
		src, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(rel)))
		if err != nil {
			t.Fatal(err)
		}
		fs, err := checkFile(rel, src)
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range fs {
			t.Error(f)
		}
	}
}

// TestCheckCatches gives checkFile one file of each forbidden pattern, as
// if it were in a consumer and as if in the owner, and wants exactly the
// findings of each rule.
func TestCheckCatches(t *testing.T) {
	const src = `package p

import (
	"hash/fnv"
	"strings"

	"github.com/oxyfs/oxyfs/store/format"
)

const offset = 14695981039346656037

func pathIno(p string) uint64 { _ = fnv.New64a; return offset * 0x100000001b3 }

func isSig(k string) bool { return strings.HasPrefix(k, "sig/") }

func link(obj string) string { return "../../sig/" + obj }

func mkdir(name string) bool { return format.ValidateObject(name+"00") == nil }

func parent(p string) string { return p[:strings.LastIndexByte(p, '/')] }

func signers() string { return "by-signer" }

func message() string { return "by-signer/ differs from sig/: %s" }
`
	for _, tc := range []struct {
		rel  string
		want []string
	}{
		{"fs/bad.go", []string{
			"fs/bad.go:10: inode numbers outside index: FNV-64 constant 14695981039346656037",
			"fs/bad.go:12: copy of a path reader: declares pathIno, which index owns",
			"fs/bad.go:12: inode numbers outside index: FNV-64 constant 0x100000001b3",
			`fs/bad.go:14: key text outside store: literal "sig/"`,
			`fs/bad.go:16: key text outside store: literal "../../sig/"`,
			"fs/bad.go:18: key reader in a path consumer: calls format.ValidateObject; index reads tree paths",
			"fs/bad.go:20: slash splitting in a path consumer: strings.LastIndexByte on '/' in parent",
			`fs/bad.go:22: tree name outside index: literal "by-signer"`,
		}},
		{"fold/bad.go", []string{ // a key consumer: may call store, may split
			"fold/bad.go:10: inode numbers outside index: FNV-64 constant 14695981039346656037",
			"fold/bad.go:12: copy of a path reader: declares pathIno, which index owns",
			"fold/bad.go:12: inode numbers outside index: FNV-64 constant 0x100000001b3",
			`fold/bad.go:14: key text outside store: literal "sig/"`,
			`fold/bad.go:16: key text outside store: literal "../../sig/"`,
			`fold/bad.go:22: tree name outside index: literal "by-signer"`,
		}},
		{"index/bad.go", []string{ // the path owner, not the key owner
			`index/bad.go:14: key text outside store: literal "sig/"`,
			`index/bad.go:16: key text outside store: literal "../../sig/"`,
		}},
		{"store/bad.go", []string{ // the key owner, not the path owner
			"store/bad.go:10: inode numbers outside index: FNV-64 constant 14695981039346656037",
			"store/bad.go:12: copy of a path reader: declares pathIno, which index owns",
			"store/bad.go:12: inode numbers outside index: FNV-64 constant 0x100000001b3",
			`store/bad.go:22: tree name outside index: literal "by-signer"`,
		}},
	} {
		fs, err := checkFile(tc.rel, []byte(src))
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, f := range fs {
			got = append(got, f.String())
		}
		slices.Sort(got)
		slices.Sort(tc.want)
		if !slices.Equal(got, tc.want) {
			t.Errorf("%s:\ngot  %q\nwant %q", tc.rel, got, tc.want)
		}
	}
}
