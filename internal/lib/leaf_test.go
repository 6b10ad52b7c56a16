package lib

import (
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestLeavesImportNothingOfOxyfs: every package under internal/lib is a
// leaf — its non-test files import no package of this module.
func TestLeavesImportNothingOfOxyfs(t *testing.T) {
	dirs, err := os.ReadDir(".")
	if err != nil {
		t.Fatal(err)
	}
	leaves := 0
	for _, d := range dirs {
		if !d.IsDir() {
			continue
		}
		leaves++
		files, _ := filepath.Glob(filepath.Join(d.Name(), "*.go"))
		for _, f := range files {
			if strings.HasSuffix(f, "_test.go") {
				continue
			}
			af, err := parser.ParseFile(token.NewFileSet(), f, nil, parser.ImportsOnly)
			if err != nil {
				t.Fatal(err)
			}
			for _, im := range af.Imports {
				p, _ := strconv.Unquote(im.Path.Value)
				if strings.HasPrefix(p, "github.com/oxyfs/oxyfs/") {
					t.Errorf("%s imports %s: a leaf helper imports nothing of oxyfs", f, p)
				}
			}
		}
	}
	if leaves == 0 {
		t.Fatal("no leaf packages found under internal/lib")
	}
}
