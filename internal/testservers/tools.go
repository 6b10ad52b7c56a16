package testservers

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// required reports whether a missing dependency called name ("fuse", "s3",
// "azure", "gcs") must fail the test rather than skip it: when CI is true or
// OXYFS_REQUIRE lists the name (or "all").
func required(name string) bool {
	if ci, err := strconv.ParseBool(os.Getenv("CI")); err == nil && ci {
		return true
	}
	for _, f := range strings.Split(os.Getenv("OXYFS_REQUIRE"), ",") {
		f = strings.TrimSpace(f)
		if f == name || f == "all" {
			return true
		}
	}
	return false
}

func skipOrFail(t testing.TB, name, msg string) {
	t.Helper()
	if required(name) {
		t.Fatalf("testservers: %s (required: CI=%q, OXYFS_REQUIRE=%q)", msg, os.Getenv("CI"), os.Getenv("OXYFS_REQUIRE"))
	}
	t.Skipf("testservers: %s (skipping; set OXYFS_REQUIRE=%s to make this fail)", msg, name)
}

var (
	goPathOnce sync.Once
	goBinDirs  []string
)

// goBins returns $GOBIN and each $GOPATH/bin, asking `go env` so that the
// defaults (~/go) count too.
func goBins() []string {
	goPathOnce.Do(func() {
		gobin, gopath := os.Getenv("GOBIN"), os.Getenv("GOPATH")
		if out, err := exec.Command("go", "env", "GOBIN", "GOPATH").Output(); err == nil {
			lines := strings.Split(strings.TrimRight(string(out), "\n"), "\n")
			if len(lines) == 2 {
				gobin, gopath = lines[0], lines[1]
			}
		}
		if gobin != "" {
			goBinDirs = append(goBinDirs, gobin)
		}
		for _, p := range filepath.SplitList(gopath) {
			if p != "" {
				goBinDirs = append(goBinDirs, filepath.Join(p, "bin"))
			}
		}
	})
	return goBinDirs
}

// findBinary looks name up on PATH, then in $GOBIN and $GOPATH/bin, then in
// the OXYFS_TOOLS directories (D, D/bin, D/node_modules/.bin each).
func findBinary(name string) (string, error) {
	if p, err := exec.LookPath(name); err == nil {
		return filepath.Abs(p)
	}
	var dirs []string
	dirs = append(dirs, goBins()...)
	for _, d := range filepath.SplitList(os.Getenv("OXYFS_TOOLS")) {
		if d != "" {
			dirs = append(dirs, d, filepath.Join(d, "bin"), filepath.Join(d, "node_modules", ".bin"))
		}
	}
	for _, d := range dirs {
		p := filepath.Join(d, name)
		if st, err := os.Stat(p); err == nil && !st.IsDir() && st.Mode()&0o111 != 0 {
			return filepath.Abs(p)
		}
	}
	return "", fmt.Errorf("not on PATH nor in [%s]; OXYFS_TOOLS=%q", strings.Join(dirs, " "), os.Getenv("OXYFS_TOOLS"))
}

// RequireFUSE skips the test unless FUSE mounts can work here: /dev/fuse
// exists and opens read-write, and the fusermount3 (or fusermount) helper is
// on PATH or in /bin. The helper is required even as root because go-fuse
// mounts through it unless MountOptions.DirectMount is set. It fails instead
// of skipping when OXYFS_REQUIRE contains "fuse" or CI=true.
func RequireFUSE(t testing.TB) {
	t.Helper()
	if err := fuseUsable(); err != nil {
		skipOrFail(t, "fuse", fmt.Sprintf("FUSE unavailable: %v; install it with: apt-get install -y fuse3 (and make /dev/fuse available)", err))
	}
}

func fuseUsable() error {
	f, err := os.OpenFile("/dev/fuse", os.O_RDWR, 0)
	if err != nil {
		return fmt.Errorf("open /dev/fuse: %w", err)
	}
	f.Close()
	for _, name := range []string{"fusermount3", "fusermount"} {
		if _, err := exec.LookPath(name); err == nil {
			return nil
		}
		if st, err := os.Stat(filepath.Join("/bin", name)); err == nil && !st.IsDir() {
			return nil
		}
	}
	return errors.New("neither fusermount3 nor fusermount is on PATH or in /bin")
}
