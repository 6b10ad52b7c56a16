package format

import (
	"errors"
	"reflect"
	"slices"
	"strings"
	"testing"
)

func TestParseRetiredRoundTrips(t *testing.T) {
	id := strings.Repeat("ab", 32)
	data := "1700000000000 pack-" + id + ".entries\n" +
		"1700000000001 pack-" + id + ".pack\n" +
		"0 loose/ab/cdef" // a final line without "\n" counts
	lines, bad := ParseRetired([]byte(data))
	if bad.Count != 0 {
		t.Fatalf("bad lines: %v", bad)
	}
	want := []RetiredLine{
		{1700000000000, "pack-" + id + ".entries"},
		{1700000000001, "pack-" + id + ".pack"},
		{0, "loose/ab/cdef"},
	}
	if !reflect.DeepEqual(lines, want) {
		t.Fatalf("ParseRetired = %+v, want %+v", lines, want)
	}
	if got := string(Retired(lines)); got != data+"\n" {
		t.Errorf("Retired = %q, want %q", got, data+"\n")
	}
	if l, b := ParseRetired(nil); len(l) != 0 || b.Count != 0 {
		t.Errorf("ParseRetired(nil) = %v, %v", l, b)
	}
}

func TestParseRetiredSkipsAndReportsBadLines(t *testing.T) {
	const good = "5 pack-x.pack"
	for _, tc := range []struct{ rule, line, want string }{
		{"blank line", "", "blank line"},
		{"CRLF ending", "5 pack-x.pack\r", `line ends in "\r"`},
		{"no space", "5", "no space between the time and the key"},
		{"retired-at not a number", "soon pack-x.pack", `retired-at "soon" is not a number`},
		{"retired-at negative", "-5 pack-x.pack", `retired-at "-5" is not a number`},
		{"retired-at overflows", "99999999999999999999 pack-x.pack", "out of range"},
		{"empty key", "5 ", "empty key"},
		{"key with a space", "5 pack-x .pack", `contains ' ' at 6`},
		{"key with CR", "5 pack\r-x", `contains '\r'`},
		{"key with NUL", "5 pack\x00-x", `contains '\x00'`},
		{"key not UTF-8", "5 pack-\xff", "not valid UTF-8"},
	} {
		lines, bad := ParseRetired([]byte(good + "\n" + tc.line + "\n" + good))
		if len(lines) != 2 || bad.Count != 1 {
			t.Errorf("%s: %d lines, %d bad, want 2 and 1", tc.rule, len(lines), bad.Count)
			continue
		}
		le := bad.First[0]
		msg := le.Error()
		if le.Line != 2 || !strings.HasPrefix(msg, "line 2 ") || !strings.Contains(msg, tc.want) {
			t.Errorf("%s: error %q, want line 2 and %q", tc.rule, msg, tc.want)
		}
		if !errors.Is(le, ErrCorrupt) {
			t.Errorf("%s: %v is not ErrCorrupt", tc.rule, le)
		}
	}
}

// FuzzParseRetired: no panic; every line is parsed or reported; a parsed
// record formats and parses back to the same lines.
func FuzzParseRetired(f *testing.F) {
	for _, s := range []string{
		"", "1 pack-a.pack\n", "1 pack-a.pack", "0 x\n2 y\n", "\n", "1 a b\n", "1 a\r\n",
		"x pack\n", "-1 p\n", "1 \n", "1 \xff\n", "1 a\x00\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		lines, bad := ParseRetired(data)
		if n := countLines(data); len(lines)+bad.Count != n {
			t.Fatalf("%d lines + %d bad of %d", len(lines), bad.Count, n)
		}
		for _, l := range lines {
			if l.RetiredAt < 0 || l.Key == "" || strings.ContainsAny(l.Key, " \n\r\x00") {
				t.Fatalf("accepted %+v", l)
			}
		}
		again, bad2 := ParseRetired(Retired(lines))
		if bad2.Count != 0 || !slices.Equal(again, lines) {
			t.Fatalf("round trip: %v, %v; want %v", again, bad2, lines)
		}
	})
}
