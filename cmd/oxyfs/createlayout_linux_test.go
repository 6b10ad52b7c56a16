//go:build linux

package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/oxyfs/oxyfs/store/format"
)

// TestMountCreateOfAnEmptyDirectoryJournalsItsWrites: `mount --create` of
// a new file:// directory with the automatic layout took it for the
// directory layout (no journal yet), then wrote the empty journal that
// makes every later open take it for a bucket store, and went on in the
// directory layout: its writes landed as keys without journal lines, so
// once the store was folded every other reader missed them while the
// mount's cp returned 0 and check said OK (user trial 50, D1). Now the
// journal is written before the store is opened for good, and each write
// through the mount appends its line. The writes come from a child
// process: this process is the mount's daemon.
func TestMountCreateOfAnEmptyDirectoryJournalsItsWrites(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "new-store")
	url := "file://" + dir
	mnt := watchedMountDir(t)
	ctx, cancel := context.WithCancel(context.Background())
	errb, done := startInProcessMount(t, ctx, "--create", "--refresh-interval", "0", url, mnt)
	defer func() {
		cancel()
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			t.Errorf("mount did not end:\n%s", errb.String())
		}
	}()
	if strings.Contains(errb.String(), "directory layout") {
		t.Errorf("the mount of a new store says the directory layout:\n%s", errb.String())
	}
	write := func(key, data string) {
		t.Helper()
		p := filepath.Join(mnt, key)
		cmd := exec.Command("sh", "-c", `mkdir -p "$(dirname "$1")" && printf %s "$2" > "$1"`, "sh", p, data)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("write %s through the mount: %v: %s", key, err, out)
		}
	}
	journaled := func(key string) bool {
		b, err := os.ReadFile(filepath.Join(dir, format.JournalKey))
		return err == nil && strings.Contains(string(b), " "+key+"\n")
	}
	first, second := "sig/ab/12cd34/alice", "sig/cd/5678ef/bob"
	write(first, "v1")
	if !journaled(first) {
		t.Errorf("after a write of %s through the mount, the journal has no line of it", first)
	}
	if _, errOut, code := runCLI(t, "fold", url); code != 0 {
		t.Fatalf("fold: exit %d: %s", code, errOut)
	}
	write(second, "v2")
	if !journaled(second) {
		t.Errorf("after a write of %s through the mount (store folded), the journal has no line of it", second)
	}
	// Every other reader sees both.
	for key, want := range map[string]string{first: "v1", second: "v2"} {
		out, errOut, code := runCLI(t, "cat", url, key)
		if code != 0 || out != want {
			t.Errorf("cat %s by another reader: exit %d, %q, want %q: %s", key, code, out, want, errOut)
		}
	}
	if out, errOut, code := runCLI(t, "check", url); code != 0 {
		t.Errorf("check: exit %d: %s%s", code, out, errOut)
	}
}

// TestCreateLeavesWhatIsThereAndReadOnlyCommandsAlone: the automatic
// layout's --create starts a bucket store only where nothing is: a
// directory of per-object keys stays the directory layout (no journal
// written into it), and a read-only command's --create writes nothing.
func TestCreateLeavesWhatIsThereAndReadOnlyCommandsAlone(t *testing.T) {
	objects := t.TempDir()
	writeFile(t, objects, "sig/ab/cdef01/alice", []byte("sig"))
	if out, errOut, code := runCLI(t, "ls", "-R", "--create", "file://"+objects); code != 0 || strings.TrimSpace(out) != "sig/ab/cdef01/alice" {
		t.Errorf("ls --create of a directory of keys: exit %d, %q: %s", code, out, errOut)
	}
	if _, errOut, code := runCLI(t, "fold", "--create", "file://"+objects); code != 2 || !strings.Contains(errOut, "directory layout") {
		t.Errorf("fold --create of a directory of keys: exit %d, want 2 naming the directory layout: %s", code, errOut)
	}
	if _, err := os.Stat(filepath.Join(objects, format.JournalKey)); !os.IsNotExist(err) {
		t.Errorf("a journal was written into a directory of keys: %v", err)
	}
	fresh := filepath.Join(t.TempDir(), "new-store")
	if _, errOut, code := runCLI(t, "ls", "--create", "file://"+fresh); code != 0 {
		t.Errorf("ls --create of a new location: exit %d: %s", code, errOut)
	}
	if _, err := os.Stat(filepath.Join(fresh, format.JournalKey)); !os.IsNotExist(err) {
		t.Errorf("ls --create (read-only) wrote a journal: %v", err)
	}
	// A writer's --create with the automatic layout starts a bucket store.
	if _, errOut, code := runCLI(t, "fold", "--create", "file://"+fresh); code != 0 {
		t.Errorf("fold --create of a new location: exit %d: %s", code, errOut)
	}
	if _, errOut, code := runCLI(t, "check", "file://"+fresh); code != 0 {
		t.Errorf("check after fold --create: exit %d: %s", code, errOut)
	}
}

// TestAnErrorNamingALineBreakIsOneLine: a path with a line break in an
// error is escaped, so what follows the break cannot pass for a line of
// oxyfs's own (user trial 50).
func TestAnErrorNamingALineBreakIsOneLine(t *testing.T) {
	dir := genFolded(t, 5)
	for _, args := range [][]string{
		{"put", "file://" + dir, "sig/aa/0001/a\nFAKE: wrote 1 entry", "/dev/null"},
		{"cat", "file://" + dir, "sig/aa/0001/a\nFAKE: wrote 1 entry"},
		{"ls", "file://" + dir, "sig/aa\nFAKE: wrote 1 entry"},
	} {
		_, errOut, code := runCLI(t, args...)
		if code == 0 || strings.Contains(errOut, "\nFAKE") || !strings.Contains(errOut, `\x0aFAKE`) {
			t.Errorf("oxyfs %s with a line break in the path: exit %d, stderr %q; want a failure naming it escaped (\\x0a)", args[0], code, errOut)
		}
	}
}
