package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const nobody = 65534

// mkdirOwned makes dir with mode (chmod, past the umask) owned by uid.
func mkdirOwned(t *testing.T, dir string, mode os.FileMode, uid int) string {
	t.Helper()
	if err := os.Mkdir(dir, mode); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, mode); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(dir, uid, uid); err != nil {
		t.Fatal(err)
	}
	return dir
}

// symlinkOwned plants a symbolic link at link to target owned by uid, as
// that user would have made it.
func symlinkOwned(t *testing.T, target, link string, uid int) {
	t.Helper()
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
	if err := os.Lchown(link, uid, uid); err != nil {
		t.Fatal(err)
	}
}

func mustBeRoot(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Fatal("this test gives folders to another user: run it as root")
	}
}

// TestSafeDirRefusesFoldersOthersControl (issue 41, F2, F5): safeDir takes
// a path whose folders are all root's or this user's and not writable by
// others unless sticky, following links of ours to such folders; it
// refuses, naming the folder, one under a folder another user owns or
// may write, and one through a link another user made, even in a sticky
// folder.
func TestSafeDirRefusesFoldersOthersControl(t *testing.T) {
	mustBeRoot(t)
	base := t.TempDir()
	ours := mkdirOwned(t, filepath.Join(base, "ours"), 0o755, 0)
	sticky := mkdirOwned(t, filepath.Join(base, "sticky"), 0o777|os.ModeSticky, 0)
	inSticky := mkdirOwned(t, filepath.Join(sticky, "mine"), 0o700, 0)
	theirs := mkdirOwned(t, filepath.Join(base, "theirs"), 0o755, nobody)
	open := mkdirOwned(t, filepath.Join(base, "open"), 0o777, 0)
	group := mkdirOwned(t, filepath.Join(base, "group"), 0o775, 0)
	if err := os.Chown(group, 0, nobody); err != nil { // root's, writable by another group
		t.Fatal(err)
	}
	ownGroup := mkdirOwned(t, filepath.Join(base, "owngroup"), 0o775, 0) // writable by root's own group
	below := func(d string) string { return mkdirOwned(t, filepath.Join(d, "sub"), 0o700, 0) }
	symlinkOwned(t, "../ours", filepath.Join(sticky, "rootlink"), 0)
	symlinkOwned(t, ours, filepath.Join(sticky, "theirlink"), nobody)
	symlinkOwned(t, below(theirs), filepath.Join(ours, "totheirs"), 0)

	for _, p := range []string{ours, inSticky, below(ownGroup), filepath.Join(sticky, "rootlink"), filepath.Join(ours, "..", "ours", ".")} {
		got, err := safeDir(p)
		if err != nil {
			t.Errorf("safeDir(%s): %v", p, err)
		} else if want, _ := filepath.EvalSymlinks(p); got != want {
			t.Errorf("safeDir(%s) = %s, want %s", p, got, want)
		}
	}
	for p, culprit := range map[string]string{
		filepath.Join(theirs, "sub"):       theirs,
		below(open):                        open,
		below(group):                       group,
		filepath.Join(sticky, "theirlink"): filepath.Join(sticky, "theirlink"),
		filepath.Join(ours, "totheirs"):    theirs,
	} {
		if _, err := safeDir(p); err == nil {
			t.Errorf("safeDir(%s) took it", p)
		} else if !strings.Contains(err.Error(), culprit+" ") {
			t.Errorf("safeDir(%s): %v, want it to name %s", p, err, culprit)
		}
	}
}

// TestDemoMountpointRefusesPlantedLink (issue 41, F1): in a working
// directory others may write, a link another user planted at oxyfs-demo
// had the demo mounted where it points (MkdirAll followed it). It is
// refused, as is that directory even without a link (a link could replace
// oxyfs-demo later); in a folder of ours a link, a file or a directory
// another user owns at oxyfs-demo is refused, and a fresh one is made.
func TestDemoMountpointRefusesPlantedLink(t *testing.T) {
	mustBeRoot(t)
	base := t.TempDir()
	target := mkdirOwned(t, filepath.Join(base, "target"), 0o755, 0)
	cwd := mkdirOwned(t, filepath.Join(base, "cwd"), 0o777, 0)
	symlinkOwned(t, target, filepath.Join(cwd, "oxyfs-demo"), nobody)
	t.Chdir(cwd)
	if m, err := demoMountpoint(); err == nil {
		t.Errorf("demo mountpoint through a planted link in a folder others may write: %s", m)
	} else if !strings.Contains(err.Error(), cwd) {
		t.Errorf("demo mountpoint: %v, want it to name %s", err, cwd)
	}
	if err := os.Remove(filepath.Join(cwd, "oxyfs-demo")); err != nil {
		t.Fatal(err)
	}
	if m, err := demoMountpoint(); err == nil {
		t.Errorf("demo mountpoint in a folder others may write: %s", m)
	}

	ours := mkdirOwned(t, filepath.Join(base, "ours"), 0o755, 0)
	t.Chdir(ours)
	mnt := filepath.Join(ours, "oxyfs-demo")
	for what, plant := range map[string]func(){
		"our own link": func() { symlinkOwned(t, target, mnt, 0) },
		"a file": func() {
			if err := os.WriteFile(mnt, nil, 0o644); err != nil {
				t.Fatal(err)
			}
		},
		"their folder": func() { mkdirOwned(t, mnt, 0o755, nobody) },
	} {
		plant()
		if m, err := demoMountpoint(); err == nil {
			t.Errorf("demo mountpoint at %s: %s", what, m)
		}
		if err := os.Remove(mnt); err != nil {
			t.Fatal(err)
		}
	}
	for range 2 { // made, then found
		m, err := demoMountpoint()
		if err != nil || m != mnt {
			t.Fatalf("demo mountpoint in a folder of ours: %s, %v; want %s", m, err, mnt)
		}
	}
}

// TestDemoStoreDirRefusesAHomeOthersOwn (issue 41, F2): with HOME in a
// folder another user owns (who could swap ~/.cache/oxyfs while root
// generates the store), the demo store is refused before anything is made
// there, naming that folder; a cache directory reached through a link
// another user made is refused; one in a sticky folder is taken.
func TestDemoStoreDirRefusesAHomeOthersOwn(t *testing.T) {
	mustBeRoot(t)
	base := t.TempDir()
	home := mkdirOwned(t, filepath.Join(base, "nobhome"), 0o777, nobody)
	t.Setenv("HOME", home)
	t.Setenv("XDG_CACHE_HOME", "")
	os.Unsetenv("XDG_CACHE_HOME")
	if d, err := demoStoreDir(); err == nil {
		t.Errorf("demo store in a home another user owns: %s", d)
	} else if !strings.Contains(err.Error(), home+" ") {
		t.Errorf("demo store: %v, want it to name %s", err, home)
	}
	if _, err := os.Lstat(filepath.Join(home, ".cache")); err == nil {
		t.Errorf("a folder was made in a home another user owns")
	}

	sticky := mkdirOwned(t, filepath.Join(base, "sticky"), 0o777|os.ModeSticky, 0)
	ours := mkdirOwned(t, filepath.Join(base, "ours"), 0o700, 0)
	symlinkOwned(t, ours, filepath.Join(sticky, "cache"), nobody)
	t.Setenv("XDG_CACHE_HOME", filepath.Join(sticky, "cache"))
	if d, err := demoStoreDir(); err == nil {
		t.Errorf("demo store through a link another user made: %s", d)
	}
	t.Setenv("XDG_CACHE_HOME", filepath.Join(sticky, "mine"))
	if d, err := demoStoreDir(); err != nil || d != filepath.Join(sticky, "mine", "oxyfs", "demo-store") {
		t.Errorf("demo store in a sticky folder: %s, %v", d, err)
	}
}

// TestLogFileRefusesALinkAboveIt (issue 41, F5): O_NOFOLLOW guards only
// the last component; a link another user planted in their folder above
// the log file had root append to a file in root's folder. It is refused
// and nothing is written there; a link of ours to a safe folder is taken
// and the log lands where it leads.
func TestLogFileRefusesALinkAboveIt(t *testing.T) {
	mustBeRoot(t)
	base := t.TempDir()
	rootdir := mkdirOwned(t, filepath.Join(base, "rootdir"), 0o755, 0)
	nob := mkdirOwned(t, filepath.Join(base, "nob"), 0o755, nobody)
	symlinkOwned(t, rootdir, filepath.Join(nob, "logs"), nobody)
	open := func(path string) error {
		lg, err := newLog(&bytes.Buffer{}, logFlags{level: "info", format: "text", file: path}, false)
		if err == nil {
			lg.sink.file.Close()
		}
		return err
	}
	if err := open(filepath.Join(nob, "logs", "oxyfs.log")); err == nil {
		t.Error("--log-file through a link in another user's folder was taken")
	}
	sticky := mkdirOwned(t, filepath.Join(base, "sticky"), 0o777|os.ModeSticky, 0)
	symlinkOwned(t, rootdir, filepath.Join(sticky, "logs"), nobody)
	if err := open(filepath.Join(sticky, "logs", "oxyfs.log")); err == nil {
		t.Error("--log-file through a link another user made in a sticky folder was taken")
	}
	if _, err := os.Lstat(filepath.Join(rootdir, "oxyfs.log")); err == nil {
		t.Error("root appended to a file where another user's link points")
	}
	ours := mkdirOwned(t, filepath.Join(base, "ours"), 0o755, 0)
	symlinkOwned(t, rootdir, filepath.Join(ours, "logs"), 0)
	if err := open(filepath.Join(ours, "logs", "oxyfs.log")); err != nil {
		t.Fatalf("--log-file through a link of ours: %v", err)
	}
	if _, err := os.Lstat(filepath.Join(rootdir, "oxyfs.log")); err != nil {
		t.Errorf("the log is not where our link leads: %v", err)
	}
}
