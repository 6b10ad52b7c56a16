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
		"0 loose/ab/cdef\n"
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
	if got := string(Retired(lines)); got != data {
		t.Errorf("Retired = %q, want %q", got, data)
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
		{"key with CR", "5 pack\r-x", `contains '\x0d'`},
		{"key with NUL", "5 pack\x00-x", `contains '\x00'`},
		{"key not UTF-8", "5 pack-\xff", "not valid UTF-8"},
	} {
		lines, bad := ParseRetired([]byte(good + "\n" + tc.line + "\n" + good + "\n"))
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
		"1 pack-a.pack\n2 pack-b.entr", "1 pack-a.pack\n17", "garbage\n1 pack-a.pack\n\n2 p",
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
		if len(data) > 0 && data[len(data)-1] != '\n' {
			last := bad.First[len(bad.First)-1]
			if bad.Count <= MaxBadLineSamples && (last.Line != bad.Count+len(lines) || !errors.Is(last, ErrCutLine)) {
				t.Fatalf("cut record %q: last bad line %v, want line %d cut", data, last, bad.Count+len(lines))
			}
		}
		again, bad2 := ParseRetired(Retired(lines))
		if bad2.Count != 0 || !slices.Equal(again, lines) {
			t.Fatalf("round trip: %v, %v; want %v", again, bad2, lines)
		}
	})
}

// TestParseRetiredReadsACutLastLineAsBad (user trial 52): a record whose
// last line does not end in "\n" was cut by a write that failed; its last
// line, which may hold a prefix of the key it meant to retire, is a bad
// line (ErrCutLine), for ParseRetired, ParseRetiredText and
// ParseRetiredRecord alike, as a line that does not parse, even when what
// is left of it parses.
func TestParseRetiredReadsACutLastLineAsBad(t *testing.T) {
	const whole = "1700000000000 pack-a.pack\n\n1700000000001 pack-b.pack\n"
	for _, tail := range []string{"1700000000002 pack-c.entr", "1700000000002 pack-c.entries", "17", "garbage"} {
		data := whole + tail
		wantLine := strings.Count(whole, "\n") + 1
		want := []RetiredLine{{1700000000000, "pack-a.pack"}, {1700000000001, "pack-b.pack"}}
		for name, parse := range map[string]func(string) ([]RetiredLine, BadLines){
			"ParseRetired":     func(s string) ([]RetiredLine, BadLines) { return ParseRetired([]byte(s)) },
			"ParseRetiredText": ParseRetiredText,
		} {
			lines, bad := parse(data)
			if !slices.Equal(lines, want) || bad.Count != 2 {
				t.Errorf("%s(%q) = %v, %d bad; want %v and 2 bad (the blank line, the cut one)", name, data, lines, bad.Count, want)
				continue
			}
			cut := bad.First[1]
			if cut.Line != wantLine || cut.Text != tail || !errors.Is(cut, ErrCutLine) || !errors.Is(cut, ErrCorrupt) {
				t.Errorf("%s(%q): cut line is %v (%#v), want line %d %q, ErrCutLine and ErrCorrupt", name, data, cut, cut, wantLine, tail)
			}
		}
		rec := ParseRetiredRecord([]byte(data))
		if rec.Bad.Count != 2 || len(rec.Lines) != 3 || rec.Lines[2].Raw != tail || !errors.Is(rec.Bad.First[1], ErrCutLine) {
			t.Errorf("ParseRetiredRecord(%q) = %+v, want the cut line bad, kept last", data, rec)
		}
		// Ended, the same line is read by its own rules.
		lines, _ := ParseRetired([]byte(data + "\n"))
		if _, err := ParseRetiredLine(tail); (err == nil) != (len(lines) == len(want)+1) {
			t.Errorf("ParseRetired(%q) = %v; the ended line is read by ParseRetiredLine (%v)", data+"\n", lines, err)
		}
	}
}

// TestBadRetiredLinesNamingACutLine: a cut last line may have meant to
// retire any key its key part begins, or, cut within its time, any key.
func TestBadRetiredLinesNamingACutLine(t *testing.T) {
	id := strings.Repeat("ab", 32)
	listA, listB := "pack-"+id+".entries", "pack-"+strings.Repeat("cd", 32)+".entries-part"
	names := []string{listA, listB}
	const whole = "1700000000000 pack-old.pack\n"
	for _, tc := range []struct {
		tail string
		want []string
	}{
		{"1700000000001 " + listA, []string{listA}},                 // only the "\n" lost
		{"1700000000001 pack-" + id[:5], []string{listA}},           // the key cut
		{"1700000000001 pack-", []string{listA, listB}},             // either
		{"1700000000001 ", []string{listA, listB}},                  // no key left
		{"17000", []string{listA, listB}},                           // cut in its time
		{"1700000000001 pack-" + id + ".pa", nil},                   // a pack's line, no list's
		{"1700000000001 pack-" + id + ".entries-", []string{listA}}, // holds listA's name: not told from it
	} {
		got := BadRetiredLinesNaming(whole+tc.tail, names)
		if len(got) != len(tc.want) {
			t.Errorf("cut line %q names %v, want %v", tc.tail, got, tc.want)
			continue
		}
		for _, name := range tc.want {
			le := got[name]
			if le == nil || le.Line != 2 || !errors.Is(le, ErrCutLine) {
				t.Errorf("cut line %q: %s named by %v, want line 2, ErrCutLine", tc.tail, name, le)
			}
		}
	}
	// The same lines ended parse, and name nothing.
	if got := BadRetiredLinesNaming(whole+"1700000000001 pack-\n", names); got != nil {
		t.Errorf("an ended line that parses names %v", got)
	}
}
