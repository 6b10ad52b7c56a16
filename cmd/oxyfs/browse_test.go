package main

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestLsRecursiveShowsWhatAFoldedReaderSees: on the hand-written store,
// `ls -R` lists exactly the live lists' and the journal's entries — not the
// retired list's, not an older writer's key no list or line names — for one
// LIST (the pack listing) and a GET per live list plus two.
func TestLsRecursiveShowsWhatAFoldedReaderSees(t *testing.T) {
	h := newHandStore(t)
	out, errOut, code := runCLI(t, "ls", "-R", "--stats", "--layout", "bucket", "file://"+h.dir)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	got := strings.Fields(out)
	slices.Sort(got)
	if !slices.Equal(got, h.foldedView) {
		t.Errorf("ls -R =\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(h.foldedView, "\n"))
	}
	if got := strings.TrimSpace(errOut); got != "requests: list=1 get=4 head=0 put=0 delete=0" {
		t.Errorf("--stats printed %q, want 1 LIST and 2+2 GETs (two live lists)", got)
	}
}

func TestCatPrintsSignatureBytes(t *testing.T) {
	h := newHandStore(t)
	out, errOut, code := runCLI(t, "cat", "--layout", "bucket", "file://"+h.dir, "sig/ab/cdef01/bob")
	if code != 0 || out != "signature of sig/ab/cdef01/bob" {
		t.Fatalf("cat = %q, exit %d, %s", out, code, errOut)
	}
	out, _, code = runCLI(t, "cat", "--layout", "bucket", "file://"+h.dir, "by-signer/bob/abcdef01")
	if code != 0 || out != "signature of sig/ab/cdef01/bob" {
		t.Fatalf("cat through by-signer = %q, exit %d", out, code)
	}
	if _, _, code := runCLI(t, "cat", "--layout", "bucket", "file://"+h.dir, "sig/ee/ff00/ghost"); code != 1 {
		t.Fatalf("cat of an entry only a retired list names: exit %d, want 1", code)
	}
}

func TestPutWritesKeyThenJournalLine(t *testing.T) {
	h := newHandStore(t)
	sig := filepath.Join(t.TempDir(), "sig.bin")
	if err := os.WriteFile(sig, []byte("new signature"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, errOut, code := runCLI(t, "put", "--stats", "--layout", "bucket", "file://"+h.dir, "sig/cd/ef0123/erin", sig)
	if code != 0 {
		t.Fatalf("put: exit %d: %s", code, errOut)
	}
	data, err := os.ReadFile(filepath.Join(h.dir, "sig/cd/ef0123/erin"))
	if err != nil || string(data) != "new signature" {
		t.Fatalf("per-object key = %q, %v", data, err)
	}
	journal, err := os.ReadFile(filepath.Join(h.dir, "pack-entries"))
	if err != nil || !strings.HasSuffix(string(journal), "\n0 sig/cd/ef0123/erin\n") {
		t.Fatalf("journal does not end with the new line:\n%s", journal)
	}
	out, _, _ := runCLI(t, "ls", "-R", "--layout", "bucket", "file://"+h.dir, "sig/cd")
	if strings.TrimSpace(out) != "sig/cd/ef0123/erin" {
		t.Fatalf("a fresh reader lists %q", out)
	}
	// Bad input: exit 2 and nothing written.
	for _, args := range [][]string{
		{"put", "--layout", "bucket", "file://" + h.dir, "sig/CD/ef0123/erin", sig},
		{"put", "--layout", "bucket", "file://" + h.dir, "sig/cd/ef012/erin", sig},
		{"put", "--layout", "bucket", "file://" + h.dir, "sig/cd/ef0123/erin"},
		{"put", "--layout", "bucket", "file://" + h.dir, "seal/cd/ef0123/v", sig},
	} {
		if _, _, code := runCLI(t, args...); code != 2 {
			t.Errorf("oxyfs %v: exit %d, want 2", args, code)
		}
	}
	after, _ := os.ReadFile(filepath.Join(h.dir, "pack-entries"))
	if string(after) != string(journal) {
		t.Errorf("a refused put changed the journal")
	}
}

// TestPutRefusesToReplaceASignatureWithoutForce: writing a signature that
// exists is refused (exit 1, naming --force, nothing written); with --force
// it is replaced and a journal line added.
func TestPutRefusesToReplaceASignatureWithoutForce(t *testing.T) {
	h := newHandStore(t)
	key := "sig/ab/cdef01/bob"
	before, err := os.ReadFile(filepath.Join(h.dir, key))
	if err != nil {
		t.Fatal(err)
	}
	journal, _ := os.ReadFile(filepath.Join(h.dir, "pack-entries"))
	sig := filepath.Join(t.TempDir(), "sig.bin")
	if err := os.WriteFile(sig, []byte("bob signs again"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, errOut, code := runCLI(t, "put", "--stats", "--layout", "bucket", "file://"+h.dir, key, sig)
	if code != 1 || !strings.Contains(errOut, "--force") || !strings.Contains(errOut, "put=0") {
		t.Fatalf("put over an existing signature: exit %d, %s; want 1 naming --force, no PUT", code, errOut)
	}
	if got, _ := os.ReadFile(filepath.Join(h.dir, key)); string(got) != string(before) {
		t.Fatalf("the refused put changed the signature to %q", got)
	}
	if got, _ := os.ReadFile(filepath.Join(h.dir, "pack-entries")); string(got) != string(journal) {
		t.Fatal("the refused put changed the journal")
	}
	if _, errOut, code := runCLI(t, "put", "--force", "--layout", "bucket", "file://"+h.dir, key, sig); code != 0 {
		t.Fatalf("put --force: exit %d: %s", code, errOut)
	}
	if got, _ := os.ReadFile(filepath.Join(h.dir, key)); string(got) != "bob signs again" {
		t.Fatalf("after put --force: %q", got)
	}
}
