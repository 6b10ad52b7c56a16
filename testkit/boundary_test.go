package testkit

import (
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

const module = "github.com/oxyfs/oxyfs/"

// TestNoProductPackageImportsTheHarness: no non-test file outside testkit/
// and scripts/ imports a package of testkit — the harness never reaches the
// binary. It also checks that the walk saw the product's packages, so an
// empty walk cannot pass.
func TestNoProductPackageImportsTheHarness(t *testing.T) {
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			switch rel {
			case ".git", "testkit", "scripts", "internal/tools":
				return filepath.SkipDir
			}
			if strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata" {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(rel, ".go") || strings.HasSuffix(rel, "_test.go") {
			return nil
		}
		af, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		seen[strings.SplitN(rel, "/", 2)[0]] = true
		for _, im := range af.Imports {
			p, _ := strconv.Unquote(im.Path.Value)
			if strings.HasPrefix(p, module+"testkit") {
				t.Errorf("%s imports %s: the product never imports the test harness", rel, p)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, top := range []string{"cmd", "store", "index", "fold", "fs", "web", "internal"} {
		if !seen[top] {
			t.Errorf("the walk read no file under %s/: it would not see an import there", top)
		}
	}
}
