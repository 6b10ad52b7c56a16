package testservers

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/oxyfs/oxyfs/testkit/testdeps"
)

func skipOrFail(t testing.TB, name, msg string) {
	t.Helper()
	testdeps.SkipOrFail(t, name, "testservers: "+msg)
}

// locate returns the absolute path of b's server program: the one on PATH
// or in OXYFS_TOOLS if there is one (findBinary), else the pinned one that
// b.provide builds or installs (go tool, npm). The programs b needs to run
// it (node) must be on PATH.
func locate(ctx context.Context, b *backend) (string, error) {
	for _, n := range b.needs {
		if _, err := exec.LookPath(n); err != nil {
			return "", fmt.Errorf("%s needs %s, which is not on PATH", b.binary, n)
		}
	}
	p, notFound := findBinary(b.binary)
	if notFound == nil {
		return p, nil
	}
	if b.provide == nil {
		return "", notFound
	}
	p, err := b.provide(ctx)
	if err != nil {
		return "", fmt.Errorf("%w; and %w", notFound, err)
	}
	return p, nil
}

// findBinary looks name up on PATH, then in the OXYFS_TOOLS directories
// (D, D/bin, D/node_modules/.bin each).
func findBinary(name string) (string, error) {
	if p, err := exec.LookPath(name); err == nil {
		return filepath.Abs(p)
	}
	var dirs []string
	for _, d := range filepath.SplitList(os.Getenv("OXYFS_TOOLS")) {
		if d != "" {
			dirs = append(dirs, d, filepath.Join(d, "bin"), filepath.Join(d, "node_modules", ".bin"))
		}
	}
	for _, d := range dirs {
		p := filepath.Join(d, name)
		if executable(p) {
			return filepath.Abs(p)
		}
	}
	return "", fmt.Errorf("not on PATH nor in OXYFS_TOOLS=%q", os.Getenv("OXYFS_TOOLS"))
}

func executable(p string) bool {
	st, err := os.Stat(p)
	return err == nil && !st.IsDir() && st.Mode()&0o111 != 0
}

// RequireFUSE skips the test unless FUSE mounts can work here: /dev/fuse
// exists and opens read-write, and, unless the test runs as root (fs mounts
// and unmounts with mount(2) and umount(2) itself then), the fusermount3 (or
// fusermount) helper is on PATH or in /bin. It fails instead of skipping
// when OXYFS_REQUIRE contains "fuse" or CI=true.
func RequireFUSE(t testing.TB) {
	t.Helper()
	if err := fuseUsable(); err != nil {
		testdeps.SkipOrFail(t, "fuse", fmt.Sprintf("testservers: FUSE unavailable: %v; install it with: apt-get install -y fuse3 (and make /dev/fuse available)", err))
	}
}

func fuseUsable() error {
	f, err := os.OpenFile("/dev/fuse", os.O_RDWR, 0)
	if err != nil {
		return fmt.Errorf("open /dev/fuse: %w", err)
	}
	f.Close()
	if os.Geteuid() == 0 {
		return nil
	}
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

// lastLines returns the end of a command's output, at most n bytes, for an
// error message.
func lastLines(out []byte, n int) string {
	s := strings.TrimSpace(string(out))
	if len(s) > n {
		s = "..." + s[len(s)-n:]
	}
	return s
}
