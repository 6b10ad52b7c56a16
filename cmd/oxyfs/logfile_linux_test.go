package main

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

// TestLogFileRefusesLinksOthersFilesAndIsPrivate (issue 41, 6): a root
// process's --log-file does not follow a symbolic link planted at its path
// (no file appears where the link points), refuses a file another user
// created there beforehand (that user would read the log), narrows a file
// of its own readable by others to 0600 and creates a new one 0600.
func TestLogFileRefusesLinksOthersFilesAndIsPrivate(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Fatal("this test chowns a file to another user: run it as root")
	}
	dir := t.TempDir()
	open := func(path string) error {
		lg, err := newLog(&bytes.Buffer{}, logFlags{level: "info", format: "text", file: path}, false)
		if err == nil {
			lg.sink.file.Close()
		}
		return err
	}
	target := filepath.Join(dir, "victim", "created-by-root")
	if err := os.Mkdir(filepath.Dir(target), 0o755); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "planted.log")
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
	if err := open(link); err == nil {
		t.Error("--log-file followed a planted symbolic link")
	}
	if _, err := os.Lstat(target); err == nil {
		t.Errorf("a file was created where the planted link points: %s", target)
	}

	theirs := filepath.Join(dir, "theirs.log")
	if err := os.WriteFile(theirs, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(theirs, 65534, 65534); err != nil {
		t.Fatal(err)
	}
	if err := open(theirs); err == nil {
		t.Error("--log-file took a file another user created beforehand")
	}

	ours := filepath.Join(dir, "ours.log")
	if err := os.WriteFile(ours, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	fresh := filepath.Join(dir, "fresh.log")
	for _, p := range []string{ours, fresh} {
		if err := open(p); err != nil {
			t.Fatalf("--log-file %s: %v", p, err)
		}
		if fi, err := os.Stat(p); err != nil || fi.Mode().Perm() != 0o600 {
			t.Errorf("--log-file %s: mode %v (%v), want 0600", p, fi.Mode().Perm(), err)
		}
	}
}
