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

// TestCatOfTheOxyViewWorksAsOnTheMount: `oxyfs cat STORE .oxy/…` prints what
// cat of the same path through a mount does (status without the mount's
// own fields).
func TestCatOfTheOxyViewWorksAsOnTheMount(t *testing.T) {
	h := newHandStore(t)
	u := "file://" + h.dir
	out, errOut, code := runCLI(t, "cat", "--layout", "bucket", u, ".oxy/status")
	if code != 0 || !strings.Contains(out, `"folded": true`) || !strings.Contains(out, `"layout": "bucket"`) {
		t.Fatalf("cat .oxy/status: exit %d %s\n%s", code, errOut, out)
	}
	journal, _ := os.ReadFile(filepath.Join(h.dir, "pack-entries"))
	if out, _, code := runCLI(t, "cat", "--layout", "bucket", u, ".oxy/journal"); code != 0 || out != string(journal) {
		t.Fatalf("cat .oxy/journal: exit %d, %q, want the journal's text", code, out)
	}
	for _, name := range []string{h.complete, h.partial} {
		out, errOut, code := runCLI(t, "cat", "--layout", "bucket", u, ".oxy/lists/"+name)
		if code != 0 || !strings.HasPrefix(out, "oxy-entries 1\n") {
			t.Fatalf("cat .oxy/lists/%s: exit %d %s %q", name, code, errOut, out)
		}
	}
	if _, _, code := runCLI(t, "cat", "--layout", "bucket", u, ".oxy/nope"); code != 1 {
		t.Fatalf("cat .oxy/nope: exit %d, want 1", code)
	}
}

// TestFoldStatsPrintsRequestsOnce: --stats prints the requests line once,
// on stderr; the report leaves its own out.
func TestFoldStatsPrintsRequestsOnce(t *testing.T) {
	h := newHandStore(t)
	out, errOut, code := runCLI(t, "fold", "--stats", "--layout", "bucket", "file://"+h.dir)
	if code != 0 {
		t.Fatalf("fold: exit %d %s", code, errOut)
	}
	if n := strings.Count(out+errOut, "requests: "); n != 1 || !strings.Contains(errOut, "requests: list=") {
		t.Fatalf("fold --stats printed %d requests lines:\n%s\n%s", n, out, errOut)
	}
}
