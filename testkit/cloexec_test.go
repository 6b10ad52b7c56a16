package testkit

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// plainDup is a dup(2) of a descriptor: not close-on-exec.
var plainDup = regexp.MustCompile(`\b(unix|syscall)\.Dup\(`)

// TestEveryDuplicateIsCloseOnExec: no Go file of the module, test or not,
// duplicates a descriptor with a plain dup(2) — it is inherited by every
// child started while it is open: a fusermount helper of the mount, the
// tests' mapping children (testkit/mapcopy), which then held a mount busy
// (the simulation met it). F_DUPFD_CLOEXEC duplicates, as every open here
// is O_CLOEXEC.
func TestEveryDuplicateIsCloseOnExec(t *testing.T) {
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	files := 0
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if path != root && (strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata" || d.Name() == "vendor") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || path == filepath.Join(root, "testkit", "cloexec_test.go") {
			return nil
		}
		files++
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for i, line := range strings.Split(string(src), "\n") {
			if plainDup.MatchString(line) {
				rel, _ := filepath.Rel(root, path)
				t.Errorf("%s:%d: a plain dup (inherited by children): duplicate with F_DUPFD_CLOEXEC: %s", rel, i+1, strings.TrimSpace(line))
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if files < 100 {
		t.Fatalf("the walk of %s saw %d Go files: it checked nothing", root, files)
	}
}
