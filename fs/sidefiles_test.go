package fs

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/oxyfs/oxyfs/store/format"
	"github.com/oxyfs/oxyfs/testkit/storefixture"
)

// sideFileNames are names editors and operating systems write beside a
// file: none of them is a signer.
var sideFileNames = []string{
	".alice.swp", ".alice.swo", "4913", "alice~", ".#alice", "#alice#",
	"._alice", ".DS_Store", "Thumbs.db", "~$alice", ".~lock.alice#", "desktop.ini",
	"sedAb3xYz", // sed -i's temporary (its rename over the signature is refused; the file stayed as a signer)
}

// TestSideFilesAreRefused: an editor's swap file, vim's probe, a backup,
// macOS' AppleDouble and Finder files, Windows' thumbnails and Office's
// owner files are refused with EPERM, logged once per name (wherever it is
// tried), in a signature directory and an index entry's alike; nothing is
// sent (issue 24 item 6).
func TestSideFilesAreRefused(t *testing.T) {
	f, _, srv, l := mountFixture(t, Options{})
	before := f.st.Counts()
	for _, dir := range []string{"sig/ab/12cd34", "seal/ab/12cd34"} {
		for _, name := range sideFileNames {
			p := filepath.Join(srv.Dir(), dir, name)
			for range 2 {
				fh, err := os.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
				if err == nil {
					fh.Close()
				}
				if !errors.Is(err, syscall.EPERM) {
					t.Errorf("create %s/%s: %v, want EPERM", dir, name, err)
				}
			}
		}
	}
	// Once per name, the line naming the first path refused.
	for _, name := range sideFileNames {
		if n := l.count("/" + name + ":"); n != 1 {
			t.Errorf("%s: logged %d times, want once: %q", name, n, l.all())
		}
		if n := l.count("/sig/ab/12cd34/" + name + ":"); n != 1 {
			t.Errorf("%s: the line does not name the first path refused: %q", name, l.all())
		}
	}
	if d := f.st.Counts().Sub(before); d.Put != 0 {
		t.Errorf("refused side files sent %v", d)
	}
	if keys := storefixture.JournalKeys(t, f.st); len(keys) != len(f.jrnl) {
		t.Errorf("journal = %v, want only the fixture's", keys)
	}
	for _, m := range l.all() {
		if strings.Contains(m, "side file") && !strings.Contains(m, "--allow-any-name") {
			t.Errorf("the log does not name --allow-any-name: %q", m)
		}
	}
	// A signer's name that only looks like one is taken.
	for _, name := range []string{"alice", "alice.swp.d", "4913x", "a~b", "tilde~x", "sedimentary", "sed-12345"} {
		e := storefixture.Ent(format.KindSig, "ab12cd34", name)
		if err := os.WriteFile(srv.path(e), []byte("sig"), 0o644); err != nil && name != "alice" {
			t.Errorf("write %s: %v", name, err)
		}
	}
}

// TestAllowAnyNameTakesSideFileNames: with AllowAnyName a side file's name
// is a signer like any other.
func TestAllowAnyNameTakesSideFileNames(t *testing.T) {
	f, _, srv, _ := mountFixture(t, Options{AllowAnyName: true})
	e := storefixture.Ent(format.KindSig, "ab12cd34", ".alice.swp")
	if err := os.WriteFile(srv.path(e), []byte("swap"), 0o644); err != nil {
		t.Fatalf("write %s with AllowAnyName: %v", e.Key(), err)
	}
	landed(t, f.st, e, []byte("swap"))
}

// TestWriteThroughADupedDescriptorLogsNothing: bash's `exec 3>file`, with
// fd 3 taken, opens the file at another descriptor and moves it to 3,
// closing the first before any byte is written; the write through 3 lands,
// and nothing is logged (the empty first close used to log "a signature
// needs bytes … (EINVAL)").
func TestWriteThroughADupedDescriptorLogsNothing(t *testing.T) {
	f, _, srv, l := mountFixture(t, Options{})
	e := storefixture.Ent(format.KindSig, "ab12cd34", "dup")
	// fd 3 is taken (as in a terminal's shell), so bash opens the file at
	// 4, dup2s it to 3 and closes 4: a flush before any write.
	run(t, "bash", "-c", `exec 3</dev/null; exec 3>"$1"; echo x >&3; exec 3>&-`, "bash", srv.path(e))
	landed(t, f.st, e, []byte("x\n"))
	// Release comes after close returns: an empty file's line would be
	// logged by then; wait for the release of a second file to be sure.
	probe := storefixture.Ent(format.KindSig, "ab12cd34", "empty")
	fh, err := os.Create(srv.path(probe))
	if err != nil {
		t.Fatal(err)
	}
	if err := fh.Close(); !errors.Is(err, syscall.EINVAL) {
		t.Errorf("close of an empty signature: %v, want EINVAL", err)
	}
	waitENOENT(t, srv.path(probe))
	if n := l.count("a signature needs bytes"); n != 1 {
		t.Errorf("%d lines say a signature needs bytes, want 1 (the empty file's): %q", n, l.all())
	}
	if n := l.count("/" + e.Key() + ":"); n != 0 {
		t.Errorf("the write through a dup'ed descriptor logged: %q", l.all())
	}
}
