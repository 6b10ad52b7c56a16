package testwatch

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// throughPackages are the packages whose tests mount through the
// package's own functions (UnarmedThrough), relative to the repository.
var throughPackages = map[string]bool{"testkit/sim": true}

// TestEveryMountingTestInTheRepoHasAWatchdog: every test of every package
// of the module that mounts runs under a watchdog — the packages with a
// check of their own (fs, integration, cmd/oxyfs, testkit/sim) and any
// package that starts mounting later — so that no hang in CI goes without
// the test's name and a goroutine dump.
func TestEveryMountingTestInTheRepoHasAWatchdog(t *testing.T) {
	root, err := moduleRoot()
	if err != nil {
		t.Fatal(err)
	}
	for _, dir := range []string{"fs", "integration", "cmd/oxyfs", "testkit/sim"} {
		if _, err := os.Stat(filepath.Join(root, dir)); err != nil {
			t.Fatalf("package %s not found under %s: the walk would check nothing there: %v", dir, root, err)
		}
	}
	err = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() {
			return nil
		}
		if p != root && (strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata" || d.Name() == "vendor") {
			return filepath.SkipDir
		}
		rel, _ := filepath.Rel(root, p)
		rel = filepath.ToSlash(rel)
		scan := Unarmed
		if throughPackages[rel] {
			scan = UnarmedThrough
		}
		bad, err := scan(p)
		if err != nil {
			return err
		}
		for _, name := range bad {
			t.Errorf("%s: %s mounts without a watchdog: mount through a helper that calls testwatch.Arm", rel, name)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// moduleRoot is the directory of the go.mod above this package's.
func moduleRoot() (string, error) {
	dir, err := filepath.Abs(".")
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("no go.mod above the test's directory")
		}
		dir = parent
	}
}
