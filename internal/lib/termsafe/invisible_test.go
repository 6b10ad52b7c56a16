package termsafe

import (
	"encoding/json"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"
)

// posers are three signers that all show as "signer-00" where invisible
// code points pass raw (issue 41, item 4): a right-to-left override, a zero
// width space, and the plain name.
var posers = []string{"signer-00", "signer-00\u202e", "signer-0\u200b0"}

// invisible holds one code point of each class that shows as nothing (or
// reorders what follows): bidi controls, marks and isolates, zero-width
// characters, other format characters, separators but the space, private
// use, an unassigned code point, default-ignorable letters, and a variation
// selector past U+FFFF.
var invisible = []rune{
	0x202a, 0x202b, 0x202c, 0x202d, 0x202e, 0x2066, 0x2067, 0x2068, 0x2069, 0x200e, 0x200f, 0x061c,
	0x200b, 0x200c, 0x200d, 0x2060, 0xfeff,
	0x00ad, 0x180e, 0x2061, 0xfff9, 0xe0001,
	0x00a0, 0x2028, 0x2029, 0x3000,
	0xe000, 0x10fffd, 0x0378,
	0x115f, 0x3164, 0x034f, 0xfe0f, 0xe0100,
	0x1160, 0xffa0, 0x2800, // F6: blank Hangul fillers, BRAILLE PATTERN BLANK
}

func TestEscapeShowsEveryInvisibleCodePoint(t *testing.T) {
	for _, r := range invisible {
		s := "a" + string(r) + "b"
		e := Escape(s)
		want := "a" + `\u` + strconv.FormatInt(int64(r)|0x10000, 16)[1:] + "b"
		if r > 0xffff {
			want = "a" + `\U` + strconv.FormatInt(int64(r)|0x100000000, 16)[1:] + "b"
		}
		if e != want {
			t.Errorf("Escape(%q) = %q, want %q", s, e, want)
		}
		if Safe(s) {
			t.Errorf("Safe(%q) = true", s)
		}
		if q := Quote(s); !strings.Contains(q, `\x`) || !strings.HasPrefix(q, "$'") {
			t.Errorf("Quote(%q) = %q: not quoted", s, q)
		}
		if l := Line(s); l != want {
			t.Errorf("Line(%q) = %q, want %q", s, l, want)
		}
		b, _ := json.Marshal(s)
		if j := string(JSON(b)); strings.ContainsRune(j, r) {
			t.Errorf("JSON(%s) = %s keeps U+%04X raw", b, j, r)
		} else {
			var back string
			if err := json.Unmarshal([]byte(j), &back); err != nil || back != s {
				t.Errorf("JSON(%s) = %s decodes as %q, %v", b, j, back, err)
			}
		}
	}
}

func TestPosersShowAsThreeNames(t *testing.T) {
	for fn, show := range map[string]func(string) string{"Escape": Escape, "Quote": Quote, "Line": Line} {
		seen := map[string]string{}
		for _, s := range posers {
			shown := show(s)
			if other, ok := seen[shown]; ok {
				t.Errorf("%s: %q and %q both show as %q", fn, s, other, shown)
			}
			seen[shown] = s
		}
	}
	if got := Escape(posers[1]); got != `signer-00\u202e` {
		t.Errorf("Escape = %q", got)
	}
	// What the attacker would write to pose as the escaped name: a
	// literal backslash-u. It shows apart.
	if got := Escape(`signer-00\u202e`); got != `signer-00\\u202e` {
		t.Errorf("Escape of a literal escape = %q", got)
	}
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Fatalf("bash, to read the quoting back: %v", err)
	}
	for _, s := range posers {
		out, err := exec.Command(bash, "-c", "printf %s "+Quote(s)).Output()
		if err != nil || string(out) != s {
			t.Errorf("bash reads %s back as %q (%v), want %q", Quote(s), out, err, s)
		}
	}
}

func TestEscapeLeavesPrintableTextAsItIs(t *testing.T) {
	for _, s := range []string{"alice@example.com", "ünïcode 日本語 العربية", `C:back\slash`, `end\`, "emoji 🔑", "e\u0301"} {
		if got := Escape(s); got != s {
			t.Errorf("Escape(%q) = %q, want it as it is", s, got)
		}
	}
}

// shown reports whether every code point of s shows as itself, by the
// definition of issue 41 (independently of unsafeRune): printable
// (unicode.IsPrint), not a format character, valid UTF-8.
func shown(s string) bool {
	if !utf8.ValidString(s) {
		return false
	}
	for _, r := range s {
		if !unicode.IsPrint(r) || unicode.Is(unicode.Cf, r) || unicode.Is(unicode.Other_Default_Ignorable_Code_Point, r) {
			return false
		}
	}
	return true
}

// unescape reads Escape's output back.
func unescape(t *testing.T, e string) string {
	var b []byte
	for i := 0; i < len(e); i++ {
		if e[i] != '\\' || i+1 == len(e) {
			b = append(b, e[i])
			continue
		}
		hex := func(n int) uint64 {
			if i+2+n > len(e) {
				t.Fatalf("short escape in %q", e)
			}
			v, err := strconv.ParseUint(e[i+2:i+2+n], 16, 32)
			if err != nil {
				t.Fatalf("bad escape in %q: %v", e, err)
			}
			i += 1 + n
			return v
		}
		switch e[i+1] {
		case '\\':
			b = append(b, '\\')
			i++
		case 'x':
			b = append(b, byte(hex(2)))
		case 'u':
			b = utf8.AppendRune(b, rune(hex(4)))
		case 'U':
			b = utf8.AppendRune(b, rune(hex(8)))
		default:
			b = append(b, '\\')
		}
	}
	return string(b)
}

// FuzzEscapeIsVisibleAndInjective: Escape's output shows as itself (no
// control, invisible code point or invalid byte) and reads back to its
// input, so distinct inputs never show the same; Quote's too.
func FuzzEscapeIsVisibleAndInjective(f *testing.F) {
	for _, s := range append(posers, "", hostile, `\u202e`, "\\\u202e", `\\`, `\x`, "\xff\xfe", "a\U000e0001b", `\`) {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		e := Escape(s)
		if !shown(e) || !Safe(e) {
			t.Fatalf("Escape(%q) = %q holds what does not show", s, e)
		}
		if back := unescape(t, e); back != s {
			t.Fatalf("Escape(%q) = %q reads back as %q", s, e, back)
		}
		if q := Quote(s); !shown(q) {
			t.Fatalf("Quote(%q) = %q holds what does not show", s, q)
		}
		if l := Line(s); !shown(strings.NewReplacer("\n", "", "\t", "").Replace(l)) {
			t.Fatalf("Line(%q) = %q holds what does not show", s, l)
		}
		b, _ := json.Marshal(s)
		j := JSON(b)
		if !shown(string(j)) {
			t.Fatalf("JSON(%s) = %s holds what does not show", b, j)
		}
		var back string
		if err := json.Unmarshal(j, &back); err != nil || back != strings.ToValidUTF8(s, "\ufffd") && utf8.ValidString(s) {
			t.Fatalf("JSON(%s) = %s decodes as %q, %v", b, j, back, err)
		}
	})
}

// TestEscapeSpacesShowsCollapsingSpaces (F6): on an HTML page a leading or
// trailing space and a run of spaces collapse, so "alice", "alice " and
// " alice" showed as one name, "a  b" as "a b"; EscapeSpaces writes those
// as \x20 and leaves a single inner space as it is.
func TestEscapeSpacesShowsCollapsingSpaces(t *testing.T) {
	for in, want := range map[string]string{
		"alice":      "alice",
		"alice bob":  "alice bob",
		"alice ":     `alice\x20`,
		" alice":     `\x20alice`,
		"a  b":       `a\x20\x20b`,
		" ":          `\x20`,
		`a\ b`:       `a\\\x20b`,
		`a\x20`:      `a\\x20`,
		"a \u202e b": `a \u202e b`,
		`a \u202e b`: `a \\u202e b`,
		"a\u2800 b":  `a\u2800 b`,
	} {
		if got := EscapeSpaces(in); got != want {
			t.Errorf("EscapeSpaces(%q) = %q, want %q", in, got, want)
		}
	}
}

// FuzzEscapeSpacesIsInjective: EscapeSpaces reads back to its input and
// leaves no space that HTML would collapse (leading, trailing, doubled).
func FuzzEscapeSpacesIsInjective(f *testing.F) {
	for _, s := range []string{"", " ", "a ", " a", "a  b", `\ `, `\x20`, "\\ \u202e", "\u2800 "} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		e := EscapeSpaces(s)
		if !shown(e) || !Safe(e) {
			t.Fatalf("EscapeSpaces(%q) = %q holds what does not show", s, e)
		}
		if back := unescape(t, e); back != s {
			t.Fatalf("EscapeSpaces(%q) = %q reads back as %q", s, e, back)
		}
		if strings.HasPrefix(e, " ") || strings.HasSuffix(e, " ") || strings.Contains(e, "  ") {
			t.Fatalf("EscapeSpaces(%q) = %q has a space HTML collapses", s, e)
		}
	})
}
