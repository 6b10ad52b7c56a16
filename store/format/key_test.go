package format

import (
	"errors"
	"strings"
	"testing"
)

func TestParseKeyAcceptsEveryValidShape(t *testing.T) {
	for _, tc := range []struct {
		key  string
		want Entry
	}{
		{"sig/ab/cd/alice", Entry{KindSig, "abcd", "alice"}},
		{"seal/01/23456789/x", Entry{KindSeal, "0123456789", "x"}},
		{"receipt/ff/ee/v", Entry{KindReceipt, "ffee", "v"}},
		{"approval/00/00/a b c", Entry{KindApproval, "0000", "a b c"}},
		{"cert/9a/bc/é…", Entry{KindCert, "9abc", "é…"}},
		{"accepted/ab/cd/...", Entry{KindAccepted, "abcd", "..."}},
		{"sig/ab/" + strings.Repeat("c", 126) + "/s", Entry{KindSig, "ab" + strings.Repeat("c", 126), "s"}},
		{"sig/ab/cd/" + strings.Repeat("v", 255), Entry{KindSig, "abcd", strings.Repeat("v", 255)}},
	} {
		e, err := ParseKey(tc.key)
		if err != nil {
			t.Errorf("ParseKey(%q): %v", tc.key, err)
			continue
		}
		if e != tc.want {
			t.Errorf("ParseKey(%q) = %+v, want %+v", tc.key, e, tc.want)
		}
		if got := e.Key(); got != tc.key {
			t.Errorf("ParseKey(%q).Key() = %q", tc.key, got)
		}
	}
}

// TestParseKeyRefusesEachRule checks every rule of DESIGN §3 on keys, and
// that the error names the rule.
func TestParseKeyRefusesEachRule(t *testing.T) {
	for _, tc := range []struct {
		rule, key, want string
	}{
		{"no kind segment", "sig", "no kind segment"},
		{"unknown kind", "sigs/ab/cd/alice", "unknown kind"},
		{"kind is case-sensitive", "SIG/ab/cd/alice", "unknown kind"},
		{"hh missing", "sig/abcd", "two-character <hh>"},
		{"hh one character", "sig/a/bcd/alice", "two-character <hh>"},
		{"hh three characters", "sig/abc/d0/alice", "two-character <hh>"},
		{"value segment missing", "sig/ab/cd", "missing <rest>/<value>"},
		{"object too short", "sig/ab/c/alice", "has 3 hex characters, want 4 to 128"},
		{"object of hh only", "sig/ab//alice", "has 2 hex characters, want 4 to 128"},
		{"object too long", "sig/ab/" + strings.Repeat("c", 128) + "/alice", "has 130 hex characters, want 4 to 128"},
		{"object odd length", "sig/ab/cde/alice", "odd number of hex characters"},
		{"object upper case", "sig/AB/cd/alice", "not lowercase hex"},
		{"object not hex", "sig/ab/cg/alice", "not lowercase hex"},
		{"value empty", "sig/ab/cd/", "empty value"},
		{"value too long", "sig/ab/cd/" + strings.Repeat("v", 256), "256 bytes, longer than 255"},
		{"value dot", "sig/ab/cd/.", `value "." is not allowed`},
		{"value dot dot", "sig/ab/cd/..", `value ".." is not allowed`},
		{"value slash", "sig/ab/cd/a/b", `contains '/'`},
		{"value NUL", "sig/ab/cd/a\x00b", `contains '\x00'`},
		{"value CR", "sig/ab/cd/a\rb", `contains '\x0d'`},
		{"value LF", "sig/ab/cd/a\nb", `contains '\x0a'`},
		{"value not UTF-8", "sig/ab/cd/a\xffb", "not valid UTF-8"},
	} {
		_, err := ParseKey(tc.key)
		if err == nil {
			t.Errorf("%s: ParseKey(%q) succeeded", tc.rule, tc.key)
			continue
		}
		if !errors.Is(err, ErrBadKey) {
			t.Errorf("%s: ParseKey(%q) = %v, not ErrBadKey", tc.rule, tc.key, err)
		}
		if !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: ParseKey(%q) = %q, want it to say %q", tc.rule, tc.key, err, tc.want)
		}
	}
}

func TestEntryValidateRefusesUnknownKind(t *testing.T) {
	err := Entry{Kind: NumKinds, Object: "abcd", Value: "v"}.Validate()
	if !errors.Is(err, ErrBadKey) || !strings.Contains(err.Error(), "unknown kind") {
		t.Errorf("Validate of kind %d = %v", NumKinds, err)
	}
}

// FuzzParseKey: whatever ParseKey accepts formats back to the same key and
// validates.
func FuzzParseKey(f *testing.F) {
	for _, s := range []string{
		"sig/ab/cd/alice", "accepted/00/00/a b", "cert/9a/bc/é…",
		"sig/ab/cd/", "sig/ab/cd/a/b", "sig/AB/cd/x", "sig//abcd/x", "sig/ab/c/x",
		"sigs/ab/cd/x", "", "/", "sig/ab/cd/..", "seal/ab/cd/\xff",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		e, err := ParseKey(s)
		if err != nil {
			if !errors.Is(err, ErrBadKey) {
				t.Fatalf("ParseKey(%q) = %v, not ErrBadKey", s, err)
			}
			return
		}
		if got := e.Key(); got != s {
			t.Fatalf("ParseKey(%q).Key() = %q", s, got)
		}
		if err := e.Validate(); err != nil {
			t.Fatalf("ParseKey(%q) accepted an entry that does not validate: %v", s, err)
		}
	})
}

// TestMessagesWriteControlBytesAsEveryOutputDoes (user trial 52): a line
// or key quoted in an error (%q) showed BEL as \a, where ls, cat and every
// other output show \x07; every control byte a message quotes is \xHH.
func TestMessagesWriteControlBytesAsEveryOutputDoes(t *testing.T) {
	const ctl = "\a\b\t\v\f\x1b"
	_, bad := ParseJournal([]byte("0 sig/ab/cd/" + ctl + "/x\n"))
	_, keyErr := ParseKey("seal/ab/cd/" + ctl + "/x")
	_, rbad := ParseRetired([]byte("x" + ctl + " pack-a\n"))
	_, objErr := ParseKey("sig/ab/c\a/v")
	if bad.Count != 1 || keyErr == nil || rbad.Count != 1 || objErr == nil {
		t.Fatalf("want every one refused: %v, %v, %v, %v", bad.Messages(), keyErr, rbad.Messages(), objErr)
	}
	for _, msg := range []string{bad.First[0].Error(), keyErr.Error(), rbad.First[0].Error(), objErr.Error()} {
		if !strings.Contains(msg, `\x07`) {
			t.Errorf("%q does not show BEL as \\x07", msg)
		}
		for _, letter := range []string{`\a`, `\b`, `\t`, `\v`, `\f`} {
			if strings.Contains(strings.ReplaceAll(msg, `\\`, ""), letter) {
				t.Errorf("%q shows a control byte as %s", msg, letter)
			}
		}
	}
}
