package main

import (
	"os"
	"os/user"
	"path/filepath"
	"strings"
	"testing"
)

// TestDemoStoreDirIsPrivate (issue 41, 7): with HOME and XDG_CACHE_HOME
// unset the demo store goes under the home directory the password
// database names, never under the shared temporary folder; a folder
// another user planted there, or a link, is refused; the folders made are
// 0700.
func TestDemoStoreDirIsPrivate(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Fatal("this test chowns a folder to another user: run it as root")
	}
	t.Setenv("HOME", "")
	os.Unsetenv("HOME")
	t.Setenv("XDG_CACHE_HOME", "")
	os.Unsetenv("XDG_CACHE_HOME")
	u, err := user.Current()
	if err != nil {
		t.Fatal(err)
	}
	dir, err := demoStoreDir()
	if err != nil {
		t.Fatalf("demo store folder with HOME unset: %v", err)
	}
	if strings.HasPrefix(dir, os.TempDir()+"/") || !strings.HasPrefix(dir, u.HomeDir+"/") {
		t.Fatalf("demo store folder with HOME unset: %s, want one under %s, not under %s", dir, u.HomeDir, os.TempDir())
	}

	cache := t.TempDir()
	t.Setenv("XDG_CACHE_HOME", cache)
	planted := filepath.Join(cache, "oxyfs")
	if err := os.Mkdir(planted, 0o777); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(planted, 65534, 65534); err != nil {
		t.Fatal(err)
	}
	if d, err := demoStoreDir(); err == nil {
		t.Errorf("demo store folder in a folder another user owns: %s", d)
	}
	if err := os.Remove(planted); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(t.TempDir(), planted); err != nil {
		t.Fatal(err)
	}
	if d, err := demoStoreDir(); err == nil {
		t.Errorf("demo store folder through a planted link: %s", d)
	}
	if err := os.Remove(planted); err != nil {
		t.Fatal(err)
	}
	d, err := demoStoreDir()
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{d, filepath.Dir(d)} {
		if fi, err := os.Stat(p); err != nil || fi.Mode().Perm() != 0o700 {
			t.Errorf("%s: %v (%v), want 0700", p, fi.Mode().Perm(), err)
		}
	}
}
