package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// shellQuoted finds the $'…' names a message holds (Quote's form: a quote
// inside is \').
var shellQuoted = regexp.MustCompile(`\$'(?:[^'\\]|\\.)*'`)

// TestPutEchoesNamesAShellReadsBack (user trial 52): put echoed a name
// holding byte 0xFF as $'…\\xff…' — its error line escaped the quoted
// name's backslash again — which bash reads as a backslash and "xff", not
// the byte. Every name put echoes (a path refused, a signature that
// exists, a signature with no bytes) is in bash's $'…' quoting, and bash
// reads each back to the very bytes of the path given.
func TestPutEchoesNamesAShellReadsBack(t *testing.T) {
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Fatalf("bash, to read the names back: %v", err)
	}
	h := newHandStore(t)
	url := "file://" + h.dir
	sig := filepath.Join(t.TempDir(), "sig")
	if err := os.WriteFile(sig, []byte("signature"), 0o600); err != nil {
		t.Fatal(err)
	}
	bel := "sig/ab/cdef01/ev\ail"
	if _, errOut, code := runCLI(t, "put", "--layout", "bucket", url, bel, sig); code != 0 {
		t.Fatalf("put %q: exit %d: %s", bel, code, errOut)
	}
	for _, tc := range []struct {
		path string
		args []string
		code int
		says string
	}{
		{"sig/ab/cdef01/ev\xffil", []string{sig}, 2, "is not an entry path"},        // not UTF-8: refused
		{"sig/ab/cdef01/a\xff\x1b]0;x\a", []string{sig}, 2, "is not an entry path"}, // and a title sequence
		{bel, []string{sig}, 1, "exists: pass --force"},
		{bel, nil, 2, "a signature needs its bytes"},
	} {
		args := append([]string{"put", "--layout", "bucket", url, tc.path}, tc.args...)
		_, errOut, code := runCLI(t, args...)
		if code != tc.code || !strings.Contains(errOut, tc.says) {
			t.Errorf("put %q: exit %d, want %d and %q: %s", tc.path, code, tc.code, tc.says, errOut)
			continue
		}
		quoted := shellQuoted.FindString(errOut)
		if quoted == "" {
			t.Errorf("put %q: no $'…' name in %q", tc.path, errOut)
			continue
		}
		got, err := exec.Command(bash, "-c", "printf %s "+quoted).Output()
		if err != nil || string(got) != tc.path {
			t.Errorf("put %q echoed %s, which bash reads as %q (%v)", tc.path, quoted, got, err)
		}
		if strings.ContainsFunc(errOut, func(r rune) bool { return r < 0x20 && r != '\n' || r == 0x7f }) {
			t.Errorf("put %q: a control byte raw in %q", tc.path, errOut)
		}
	}
}

// TestErrorsQuoteAPathTheyName: a path an error names (cat's and ls's
// "stat PATH: file does not exist") is quoted as ls quotes a name, so a
// path with BEL and one with the text \x07 show apart, and the one quoted
// reads back in bash (the other is shown as it is, as ls shows it).
func TestErrorsQuoteAPathTheyName(t *testing.T) {
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Fatalf("bash, to read the names back: %v", err)
	}
	h := newHandStore(t)
	url := "file://" + h.dir
	shown := map[string]string{}
	for _, p := range []string{"sig/ab/cdef01/no\ape", `sig/ab/cdef01/no\x07pe`} {
		for _, cmd := range []string{"cat", "ls"} {
			_, errOut, code := runCLI(t, cmd, "--layout", "bucket", url, p)
			line, _, _ := strings.Cut(strings.TrimPrefix(errOut, "oxyfs "+cmd+": stat "), ": file does not exist")
			if code != 1 || !strings.Contains(errOut, ": file does not exist") {
				t.Fatalf("%s %q: exit %d: %s", cmd, p, code, errOut)
			}
			if !strings.HasPrefix(line, "$'") { // shown as it is: safe
				if line != p {
					t.Errorf("%s %q: the error names %s", cmd, p, line)
				}
			} else if got, err := exec.Command(bash, "-c", "printf %s "+line).Output(); err != nil || string(got) != p {
				t.Errorf("%s %q: the error names %s, which bash reads as %q (%v)", cmd, p, line, got, err)
			}
			if other, ok := shown[line]; ok && other != p {
				t.Errorf("%q and %q both show as %s", p, other, line)
			}
			shown[line] = p
		}
	}
}
