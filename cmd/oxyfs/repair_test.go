package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// checkJSON is the JSON of `oxyfs check --json` as a script reads it.
type checkJSON struct {
	Problems []struct {
		Code     string   `json:"code"`
		Severity string   `json:"severity"`
		Keys     []string `json:"keys"`
		Count    int      `json:"count"`
		Message  string   `json:"message"`
		Details  []string `json:"details"`
		Fix      string   `json:"fix"`
	} `json:"problems"`
	Notes []struct {
		Code     string `json:"code"`
		Severity string `json:"severity"`
	} `json:"notes"`
}

// TestCheckJSONAndDropMalformed (issue 42 items 2 and 3): a journal with
// a garbage line and CRLF line endings made check exit 1 forever, its
// --json problems bare strings, and no command could clean the journal.
// check --json now gives the problem's code, keys and fix; the fix it
// names, run as it says, saves the line to the file and removes it; check
// then exits 0.
func TestCheckJSONAndDropMalformed(t *testing.T) {
	h := newHandStore(t)
	url := "file://" + h.dir
	if _, errOut, code := runCLI(t, "fold", "--layout", "bucket", url); code != 0 {
		t.Fatalf("fold: exit %d: %s", code, errOut)
	}
	journal, err := os.ReadFile(filepath.Join(h.dir, "pack-entries"))
	if err != nil {
		t.Fatal(err)
	}
	damaged := strings.ReplaceAll(string(journal), "\n", "\r\n") + "garbage here\r\n"
	writeFile(t, h.dir, "pack-entries", []byte(damaged))

	out, errOut, code := runCLI(t, "check", "--layout", "bucket", "--json", url)
	var rep checkJSON
	if err := json.Unmarshal([]byte(out), &rep); err != nil || code != 1 {
		t.Fatalf("check --json: exit %d, %v\n%s\n%s", code, err, out, errOut)
	}
	if len(rep.Problems) != 1 {
		t.Fatalf("want one problem (the garbage line; the CRLF lines parse):\n%s", out)
	}
	p := rep.Problems[0]
	fix := "oxyfs fold --drop-malformed bad-lines.txt " + url
	if p.Code != "journal-malformed-line" || p.Severity != "problem" || len(p.Keys) != 1 || p.Keys[0] != "pack-entries" || p.Count != 1 ||
		!strings.Contains(strings.Join(p.Details, "\n"), `"garbage here\x0d"`) || !strings.HasPrefix(p.Fix, fix) || p.Message == "" {
		t.Errorf("check --json problem: %+v", p)
	}

	// The fix, as check names it; the line is saved verbatim, its "\r" too.
	saved := filepath.Join(t.TempDir(), "bad-lines.txt")
	args := append(strings.Fields(strings.Replace(strings.TrimPrefix(fix, "oxyfs "), "bad-lines.txt", saved, 1)), "--layout", "bucket")
	out, errOut, code = runCLI(t, append(args[:1:1], append([]string{"--dry-run"}, args[1:]...)...)...)
	if code != 0 || !strings.Contains(out, `"garbage here\x0d"`) || !strings.Contains(out, "to move out") || fileExists(saved) {
		t.Fatalf("dry run: exit %d\n%s\n%s", code, out, errOut)
	}
	out, errOut, code = runCLI(t, args...)
	if code != 0 || !strings.Contains(out, "moved out (saved first)") {
		t.Fatalf("%v: exit %d\n%s\n%s", args, code, out, errOut)
	}
	got, err := os.ReadFile(saved)
	if err != nil || !strings.Contains(string(got), "\ngarbage here\r\n") || !strings.HasPrefix(string(got), "# pack-entries: 1 line that does not parse") {
		t.Errorf("saved lines %q, %v", got, err)
	}
	if after, _ := os.ReadFile(filepath.Join(h.dir, "pack-entries")); strings.Contains(string(after), "garbage") || strings.Contains(string(after), "\r") {
		t.Errorf("journal after the repair: %q", after)
	}
	out, errOut, code = runCLI(t, "check", "--layout", "bucket", url)
	if code != 0 || !strings.Contains(out, "OK: no problems") {
		t.Errorf("check after the repair: exit %d\n%s\n%s", code, out, errOut)
	}
}

// TestCheckTextNamesTheFix: the text of check prints, per problem, its
// code, message, keys and fix.
func TestCheckTextNamesTheFix(t *testing.T) {
	h := newHandStore(t)
	url := "file://" + h.dir
	writeFile(t, h.dir, "sig/ab/cdef01/empty", nil)
	out, _, code := runCLI(t, "check", "--layout", "bucket", url)
	for _, want := range []string{"  - sig-empty: ", "    keys (1): sig/ab/cdef01/empty", "    fix: re-sign: ", "oxyfs put --force " + url} {
		if code != 1 || !strings.Contains(out, want) {
			t.Errorf("check text (exit %d) lacks %q:\n%s", code, want, out)
		}
	}
}

func fileExists(p string) bool { _, err := os.Stat(p); return err == nil }

// TestDropMalformedRefusesDash: "oxyfs fold --drop-malformed - STORE"
// (where "-" elsewhere means stdin or stdout) saved the lines to a file
// named "-" in the working directory; it is now a usage error, and the
// journal keeps its lines.
func TestDropMalformedRefusesDash(t *testing.T) {
	h := newHandStore(t)
	url := "file://" + h.dir
	journal, err := os.ReadFile(filepath.Join(h.dir, "pack-entries"))
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, h.dir, "pack-entries", append(journal, "garbage here\n"...))
	t.Chdir(t.TempDir())
	_, errOut, code := runCLI(t, "fold", "--layout", "bucket", "--drop-malformed", "-", url)
	if code != 2 || fileExists("-") {
		t.Errorf("fold --drop-malformed -: exit %d, a file named - made: %v\n%s", code, fileExists("-"), errOut)
	}
	if after, _ := os.ReadFile(filepath.Join(h.dir, "pack-entries")); !strings.Contains(string(after), "garbage here") {
		t.Errorf("the journal lost its line: %q", after)
	}
}

// TestCheckCountsEveryLineInWords (user trial 52): check said "1 lines",
// and counted only the journal's lines that parse ("1 lines" of a journal
// of 2, one garbage). It counts every line of both records, says how many
// do not parse, and words each count for its number.
func TestCheckCountsEveryLineInWords(t *testing.T) {
	h := newHandStore(t)
	url := "file://" + h.dir
	if _, errOut, code := runCLI(t, "fold", "--layout", "bucket", url); code != 0 {
		t.Fatalf("fold: exit %d: %s", code, errOut)
	}
	journal, err := os.ReadFile(filepath.Join(h.dir, "pack-entries"))
	if err != nil {
		t.Fatal(err)
	}
	damaged := string(journal) + "garbage here\n"
	writeFile(t, h.dir, "pack-entries", []byte(damaged))
	writeFile(t, h.dir, "pack-retired", []byte("1 pack-x.pack\n"))
	lines := strings.Count(damaged, "\n")
	if lines < 2 {
		t.Fatalf("the journal %q should hold a line besides the garbage", damaged)
	}

	out, errOut, code := runCLI(t, "check", "--layout", "bucket", url)
	for _, want := range []string{
		fmt.Sprintf("journal: %d lines (1 line that does not parse), ", lines),
		"; retired record: 1 line\n",
		"journal pack-entries has 1 line that does not parse:",
	} {
		if code != 1 || !strings.Contains(out, want) {
			t.Errorf("check (exit %d) lacks %q:\n%s\n%s", code, want, out, errOut)
		}
	}
	out, _, _ = runCLI(t, "check", "--layout", "bucket", "--json", url)
	var rep struct {
		JournalLines    int `json:"journal_lines"`
		JournalBadLines int `json:"journal_bad_lines"`
		RetiredLines    int `json:"retired_lines"`
		RetiredBadLines int `json:"retired_bad_lines"`
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil || rep.JournalLines != lines || rep.JournalBadLines != 1 || rep.RetiredLines != 1 || rep.RetiredBadLines != 0 {
		t.Errorf("check --json: %+v (%v), want journal_lines %d, journal_bad_lines 1, retired_lines 1, retired_bad_lines 0:\n%s", rep, err, lines, out)
	}
}

// TestCheckShowsControlBytesAsEveryOutputDoes (user trial 52): check
// quoted a journal line holding BEL as "…\a…" where ls and cat show \x07;
// and its error line doubled the backslash of a quoted \x07.
func TestCheckShowsControlBytesAsEveryOutputDoes(t *testing.T) {
	h := newHandStore(t)
	url := "file://" + h.dir
	writeFile(t, h.dir, "pack-entries", []byte("0 sig/ab/cdef01/alice\n0 sig/ab/x\ay\n"))
	out, errOut, code := runCLI(t, "check", "--layout", "bucket", url)
	if code != 1 || !strings.Contains(out, `"0 sig/ab/x\x07y"`) || strings.Contains(out+errOut, `\a`) || strings.Contains(out+errOut, `\\x07`) {
		t.Errorf("check (exit %d) should quote the line as \"0 sig/ab/x\\x07y\", and show no \\a nor \\\\x07:\n%s\n%s", code, out, errOut)
	}
}
