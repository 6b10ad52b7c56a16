package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/klauspost/compress/zstd"
)

// handStore writes a store by hand, per spec §13.7, without the store
// package's codecs: a journal with folded and unfolded lines, a complete
// list, a partial list, a retired list, per-object keys and a pack.
type handStore struct {
	dir               string
	complete, partial string
	retired           string
	journalLines      int
	folded, unfolded  int
	perObject         []string
	// foldedView: the entries §13.7 says a folded reader sees: the live
	// lists' keys and the journal's, and nothing else.
	foldedView []string
}

func writeList(t *testing.T, dir string, keys []string, suffix string) string {
	t.Helper()
	text := "oxy-entries 1\n" + strings.Join(keys, "\n") + "\n"
	sum := sha256.Sum256([]byte(text))
	enc, err := zstd.NewWriter(nil)
	if err != nil {
		t.Fatal(err)
	}
	name := "pack-" + hex.EncodeToString(sum[:]) + suffix
	writeFile(t, dir, name, enc.EncodeAll([]byte(text), nil))
	return name
}

func writeFile(t *testing.T, dir, key string, data []byte) {
	t.Helper()
	p := filepath.Join(dir, filepath.FromSlash(key))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, data, 0o644); err != nil {
		t.Fatal(err)
	}
}

func newHandStore(t *testing.T) *handStore {
	dir := t.TempDir()
	h := &handStore{dir: dir}
	h.perObject = []string{
		"sig/ab/cdef01/alice", "sig/ab/cdef01/bob", "seal/12/3456/change-1",
		"receipt/ab/cdef01/ci", "sig/ff/0011/carol", "approval/ab/cdef01/dave",
	}
	for _, k := range h.perObject {
		var body []byte
		if strings.HasPrefix(k, "sig/") {
			body = []byte("signature of " + k)
		}
		writeFile(t, dir, k, body)
	}
	// An older writer's entry: its own key only, named by no list or line.
	writeFile(t, dir, "cert/77/8899/older-writer", nil)
	// An older complete list, retired by a fold that wrote the live one. It
	// names an entry nothing else names (deleted since by a collection).
	h.retired = writeList(t, dir, []string{"sig/ab/cdef01/alice", "sig/ee/ff00/ghost"}, ".entries")
	h.complete = writeList(t, dir, []string{"seal/12/3456/change-1", "sig/ab/cdef01/alice", "sig/ab/cdef01/bob"}, ".entries")
	h.partial = writeList(t, dir, []string{"receipt/ab/cdef01/ci"}, ".entries-part")
	journal := "1764460800000 sig/ab/cdef01/bob\n" +
		"1764460800000 receipt/ab/cdef01/ci\n" +
		"0 sig/ff/0011/carol\n" +
		"0 approval/ab/cdef01/dave\n" +
		"0 sig/ab/cdef01/alice\n"
	h.journalLines, h.folded, h.unfolded = 5, 2, 3
	h.foldedView = []string{
		"approval/ab/cdef01/dave", "receipt/ab/cdef01/ci", "seal/12/3456/change-1",
		"sig/ab/cdef01/alice", "sig/ab/cdef01/bob", "sig/ff/0011/carol",
	}
	writeFile(t, dir, "pack-entries", []byte(journal))
	writeFile(t, dir, "pack-retired", []byte("1764460800000 "+h.retired+"\n1764460800000 pack-0123.pack\n"))
	// Three pack files (one of them retired): status counts the listed packs.
	writeFile(t, dir, "pack-0123.pack", []byte("pack"))
	writeFile(t, dir, "pack-0456.pack", []byte("pack"))
	writeFile(t, dir, "pack-0456.idx", []byte("idx"))
	return h
}

func runCLI(t *testing.T, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	var out, errb bytes.Buffer
	code = run(context.Background(), args, strings.NewReader(""), &out, &errb)
	return out.String(), errb.String(), code
}

func TestStatusSummarizesHandWrittenStore(t *testing.T) {
	h := newHandStore(t)
	out, errOut, code := runCLI(t, "status", "--layout", "bucket", "--stats", "file://"+h.dir)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	for _, want := range []string{
		"layout   bucket",
		"folded   yes",
		"journal  5 lines: 2 folded, 3 unfolded",
		"lists    2 live (1 complete, 1 partial), 1 retired",
		h.complete, h.partial, h.retired,
		"retired  2 keys in the retired record",
		"legacy   absent",
		"packs    3",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("status output lacks %q:\n%s", want, out)
		}
	}
	// The open of a status: one LIST of pack-, one GET each of the journal
	// and the retired record, and one GET per live list (2), each decoded:
	// readers list the prefixes if one does not decode (issue 42).
	if got := strings.TrimSpace(errOut); got != "requests: list=1 get=4 head=0 put=0 delete=0" {
		t.Errorf("--stats printed %q", got)
	}

	out, _, code = runCLI(t, "status", "--layout", "bucket", "--json", "file://"+h.dir)
	if code != 0 {
		t.Fatalf("--json exit %d", code)
	}
	var s storeStatus
	if err := json.Unmarshal([]byte(out), &s); err != nil {
		t.Fatalf("--json output does not parse: %v\n%s", err, out)
	}
	if s.JournalLines != h.journalLines || s.JournalFolded != h.folded || s.JournalUnfolded != h.unfolded ||
		s.LiveComplete != 1 || s.LivePartial != 1 || s.RetiredLists != 1 || !s.Folded || s.LegacyMarker || s.Packs != 3 || s.RetiredKeys != 2 {
		t.Errorf("--json numbers differ from the store: %+v", s)
	}
}

// TestStatusNamesForgetRecords: a forget record is a retired key that is
// no list and no pack; status says what it is.
func TestStatusNamesForgetRecords(t *testing.T) {
	h := newHandStore(t)
	text := "oxy-forgotten 1 1764460800000\nsig abcdef01\n"
	sum := sha256.Sum256([]byte(text))
	name := "pack-" + hex.EncodeToString(sum[:]) + ".forgotten"
	writeFile(t, h.dir, name, []byte(text))
	retired, err := os.ReadFile(filepath.Join(h.dir, "pack-retired"))
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, h.dir, "pack-retired", append(retired, "1764460800001 "+name+"\n"...))
	out, errOut, code := runCLI(t, "status", "--layout", "bucket", "file://"+h.dir)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	for _, want := range []string{"retired  3 keys in the retired record", "1 forget record of them", "packs    3"} {
		if !strings.Contains(out, want) {
			t.Errorf("status output lacks %q:\n%s", want, out)
		}
	}
	out, _, _ = runCLI(t, "status", "--layout", "bucket", "--json", "file://"+h.dir)
	var s storeStatus
	if err := json.Unmarshal([]byte(out), &s); err != nil || s.ForgetRecords != 1 || s.RetiredKeys != 3 {
		t.Errorf("--json: %+v (%v)", s, err)
	}
}

func TestStatusUnreadableStoreExits1(t *testing.T) {
	_, errOut, code := runCLI(t, "status", "--layout", "bucket", "file://"+filepath.Join(t.TempDir(), "missing"))
	if code != 1 || !strings.Contains(errOut, "missing") {
		t.Fatalf("exit %d, stderr %q; want 1 and a message naming the store", code, errOut)
	}
}

func TestUsageErrorsExit2(t *testing.T) {
	for _, args := range [][]string{{"status"}, {"nosuch"}, {"status", "--layout", "weird", "mem://"}, {"status", "--bogus", "mem://"}} {
		if _, _, code := runCLI(t, args...); code != 2 {
			t.Errorf("oxyfs %v: exit %d, want 2", args, code)
		}
	}
}

// TestMisspelledCommandGetsASuggestion: one line naming the command meant,
// exit 2; a word far from every command gets the usage.
func TestMisspelledCommandGetsASuggestion(t *testing.T) {
	for typed, want := range map[string]string{"mout": "mount", "stauts": "status", "chekc": "check", "fodl": "fold", "serv": "serve"} {
		_, errOut, code := runCLI(t, typed)
		if code != 2 || !strings.Contains(errOut, fmt.Sprintf("did you mean %q", want)) || strings.Count(errOut, "\n") != 1 {
			t.Errorf("oxyfs %s: exit %d, %q; want one line suggesting %s", typed, code, errOut, want)
		}
	}
	_, errOut, code := runCLI(t, "xyzzyplugh")
	if code != 2 || strings.Contains(errOut, "did you mean") || !strings.Contains(errOut, "unknown command") {
		t.Errorf("oxyfs xyzzyplugh: exit %d, %q", code, errOut)
	}
}

// TestStatusOfAnUnreadableListIsNotFolded (issue 42 item 5): status said
// "folded yes" and exited 0 over a live complete list that does not decode,
// while readers list the per-object prefixes instead.
func TestStatusOfAnUnreadableListIsNotFolded(t *testing.T) {
	h := newHandStore(t)
	writeFile(t, h.dir, h.complete, []byte("not zstd"))
	out, errOut, code := runCLI(t, "status", "--layout", "bucket", "file://"+h.dir)
	if code != 1 || strings.Contains(out, "folded   yes") || !strings.Contains(out, "folded   no: a live list does not decode") ||
		!strings.Contains(out, "unreadable: "+h.complete) || !strings.Contains(errOut, "1 live list does not decode") || !strings.Contains(errOut, "oxyfs check file://"+h.dir) {
		t.Errorf("status of a store whose complete list does not decode: exit %d\n%s\n%s", code, out, errOut)
	}
	out, _, code = runCLI(t, "status", "--layout", "bucket", "--json", "file://"+h.dir)
	var s storeStatus
	if err := json.Unmarshal([]byte(out), &s); err != nil || code != 1 || s.Folded || len(s.UnreadableLists) != 1 {
		t.Errorf("status --json: exit %d, %+v, %v", code, s, err)
	}
}

// TestStatusRefusesAWrongPath (issue 42 item 5): status of a directory
// holding no store showed an empty directory-layout store and exited 0,
// where every other command refuses it.
func TestStatusRefusesAWrongPath(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, dir, "notes.txt", []byte("hello"))
	for _, args := range [][]string{{"status", "file://" + dir}, {"check", "file://" + dir}, {"status", "file://" + t.TempDir()}} {
		_, errOut, code := runCLI(t, args...)
		if code != 1 || !strings.Contains(errOut, "no oxy store") && !strings.Contains(errOut, "holds nothing") {
			t.Errorf("%v: exit %d: %s", args, code, errOut)
		}
	}
}

// TestCatOfAKeyNoListNames (issue 42 item 5): cat of an entry whose key
// exists, on a folded store whose lists and journal do not name it, said
// "file does not exist". It says the key exists and is not folded yet, and
// the fold that shows it.
func TestCatOfAKeyNoListNames(t *testing.T) {
	h := newHandStore(t)
	_, errOut, code := runCLI(t, "cat", "--layout", "bucket", "file://"+h.dir, "cert/77/8899/older-writer")
	if code != 1 || !strings.Contains(errOut, "exists in the store") || !strings.Contains(errOut, "not folded or journaled yet") || !strings.Contains(errOut, "oxyfs fold file://"+h.dir) {
		t.Errorf("cat of a key no list names: exit %d: %s", code, errOut)
	}
	// ls of it says the same (it said "file does not exist").
	for _, long := range []string{"-l", "-R"} {
		_, errOut, code := runCLI(t, "ls", long, "--layout", "bucket", "file://"+h.dir, "cert/77/8899/older-writer")
		if code != 1 || !strings.Contains(errOut, "ls cert/77/8899/older-writer: the key exists in the store") || !strings.Contains(errOut, "oxyfs fold file://"+h.dir) {
			t.Errorf("ls %s of a key no list names: exit %d: %s", long, code, errOut)
		}
	}
	// The fold it names runs as printed: a URL with a query is quoted.
	u := "file://" + h.dir + "?metadata=skip&no_tmp_dir=true"
	_, errOut, _ = runCLI(t, "cat", "--layout", "bucket", u, "cert/77/8899/older-writer")
	_, cmd, _ := strings.Cut(strings.TrimSpace(errOut), "a complete fold lists it: ")
	if out, err := exec.Command("sh", "-c", "set -- "+cmd+`; shift $(($# - 1)); printf %s "$1"`).Output(); err != nil || string(out) != u {
		t.Errorf("a shell reads the fold %q as naming the store %q (%v), not %q", cmd, out, err, u)
	}
	_, errOut, code = runCLI(t, "cat", "--layout", "bucket", "file://"+h.dir, "cert/77/8899/nobody")
	if code != 1 || strings.Contains(errOut, "exists in the store") {
		t.Errorf("cat of a key that does not exist: exit %d: %s", code, errOut)
	}
}
