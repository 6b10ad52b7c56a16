package format

import (
	"errors"
	"reflect"
	"slices"
	"strings"
	"testing"
)

func TestParseJournalReadsLinesInAppendOrder(t *testing.T) {
	data := "0 sig/ab/cd/alice\n" +
		"1700000000123 seal/00/11/a value with spaces\n" +
		"0 approval/ff/ee/bob" // a final line without "\n" counts
	lines, bad := ParseJournal([]byte(data))
	if bad.Count != 0 {
		t.Fatalf("bad lines: %v", bad)
	}
	want := []JournalLine{
		{0, "sig/ab/cd/alice"},
		{1700000000123, "seal/00/11/a value with spaces"},
		{0, "approval/ff/ee/bob"},
	}
	if !reflect.DeepEqual(lines, want) {
		t.Fatalf("ParseJournal = %+v, want %+v", lines, want)
	}
	if lines[0].Folded() || !lines[1].Folded() {
		t.Errorf("Folded: %v %v, want false true", lines[0].Folded(), lines[1].Folded())
	}
	got := string(Journal(lines))
	if got != data+"\n" {
		t.Errorf("Journal = %q, want %q", got, data+"\n")
	}
}

func TestParseJournalOfNothingIsEmpty(t *testing.T) {
	for _, data := range [][]byte{nil, {}} {
		lines, bad := ParseJournal(data)
		if len(lines) != 0 || bad.Count != 0 {
			t.Errorf("ParseJournal(%q) = %v, %v", data, lines, bad)
		}
	}
	if got := Journal(nil); len(got) != 0 {
		t.Errorf("Journal(nil) = %q", got)
	}
}

func TestAppendJournalLine(t *testing.T) {
	got := AppendJournalLine([]byte("x"), JournalLine{42, "sig/ab/cd/s"})
	if string(got) != "x42 sig/ab/cd/s\n" {
		t.Errorf("AppendJournalLine = %q", got)
	}
}

// TestParseJournalSkipsAndReportsBadLines checks each rule of a journal line:
// the line is skipped, reported with its number, and the error names the
// rule; the good lines around it are kept.
func TestParseJournalSkipsAndReportsBadLines(t *testing.T) {
	const good = "0 sig/ab/cd/alice"
	for _, tc := range []struct {
		rule, line, want string
		badKey           bool
	}{
		{"blank line", "", "blank line", false},
		{"CR alone", "\r", "blank line", false},
		{"two CRs", "0 sig/ab/cd/alice\r\r", `line ends in "\r"`, false},
		{"no space", "0", "no space between the time and the key", false},
		{"folded-at missing", " sig/ab/cd/alice", "folded-at is missing", false},
		{"folded-at not a number", "garbage sig/ab/cd/alice", `folded-at "garbage" is not a number`, false},
		{"folded-at negative", "-1 sig/ab/cd/alice", `folded-at "-1" is not a number`, false},
		{"folded-at with plus", "+1 sig/ab/cd/alice", `folded-at "+1" is not a number`, false},
		{"folded-at overflows", "9223372036854775808 sig/ab/cd/alice", "folded-at \"9223372036854775808\" is out of range", false},
		{"empty key", "0 ", "empty key", false},
		{"two spaces", "0  sig/ab/cd/alice", "unknown kind", true},
		{"malformed key", "0 sig/ab/cd/a/b", "contains '/'", true},
		{"legacy key", "0 sigs/ab/cd", "unknown kind", true},
	} {
		data := good + "\n" + tc.line + "\n" + good + "\n"
		lines, bad := ParseJournal([]byte(data))
		if len(lines) != 2 {
			t.Errorf("%s: kept %d lines, want the 2 good ones", tc.rule, len(lines))
		}
		if bad.Count != 1 {
			t.Errorf("%s: %d bad lines, want 1: %v", tc.rule, bad.Count, bad)
			continue
		}
		le := bad.First[0]
		if le.Line != 2 || le.Text != tc.line {
			t.Errorf("%s: LineError{Line: %d, Text: %q}, want line 2 %q", tc.rule, le.Line, le.Text, tc.line)
		}
		msg := le.Error()
		if !strings.HasPrefix(msg, "line 2 ") || !strings.Contains(msg, tc.want) {
			t.Errorf("%s: error %q, want line 2 and %q", tc.rule, msg, tc.want)
		}
		if !errors.Is(le, ErrCorrupt) {
			t.Errorf("%s: %v is not ErrCorrupt", tc.rule, le)
		}
		if errors.Is(le, ErrBadKey) != tc.badKey {
			t.Errorf("%s: errors.Is(ErrBadKey) = %v, want %v", tc.rule, !tc.badKey, tc.badKey)
		}
	}
}

func TestParseJournalLargestFoldedAt(t *testing.T) {
	lines, bad := ParseJournal([]byte("9223372036854775807 sig/ab/cd/s\n"))
	if bad.Count != 0 || len(lines) != 1 || lines[0].FoldedAt != 1<<63-1 {
		t.Errorf("ParseJournal = %v, %v", lines, bad)
	}
}

func TestLineErrorMessageAndClip(t *testing.T) {
	le := lineError(3, "garbage", errors.New("folded-at is not a number"))
	if got, want := le.Error(), `line 3 "garbage": folded-at is not a number`; got != want {
		t.Errorf("Error() = %q, want %q", got, want)
	}
	long := lineError(1, strings.Repeat("x", 200), errBlankLine)
	if !strings.HasPrefix(long.Text, strings.Repeat("x", 80)) || strings.Contains(long.Text, strings.Repeat("x", 81)) {
		t.Errorf("Text of a 200-byte line = %q, want its first 80 bytes", long.Text)
	}
	if !errors.Is(long, errBlankLine) || !errors.Is(long, ErrCorrupt) {
		t.Errorf("%v does not unwrap to its rule and ErrCorrupt", long)
	}
}

// FuzzParseJournal: no panic; every line is either parsed or reported once;
// a parsed journal formats and parses back to the same lines.
func FuzzParseJournal(f *testing.F) {
	for _, s := range []string{
		"", "0 sig/ab/cd/alice\n", "0 sig/ab/cd/alice", "1 seal/00/11/a b\n0 cert/ff/ee/x\n",
		"\n", "0 sig/ab/cd/alice\r\n", "x sig/ab/cd/a\n", "-1 sig/ab/cd/a\n", "0\n", "0 \n",
		"99999999999999999999 sig/ab/cd/a\n", "0 sig/ab/cd/a/b\n", "007 sig/ab/cd/a\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		lines, bad := ParseJournal(data)
		if n := countLines(data); len(lines)+bad.Count != n {
			t.Fatalf("%d lines + %d bad of %d", len(lines), bad.Count, n)
		}
		for _, le := range bad.First {
			if !errors.Is(le, ErrCorrupt) {
				t.Fatalf("%v is not ErrCorrupt", le)
			}
		}
		for _, l := range lines {
			if l.FoldedAt < 0 {
				t.Fatalf("negative folded-at %d", l.FoldedAt)
			}
		}
		again, bad2 := ParseJournal(Journal(lines))
		if bad2.Count != 0 || !slices.Equal(again, lines) {
			t.Fatalf("round trip: %v, %v; want %v", again, bad2, lines)
		}
	})
}

// countLines counts the lines of a record: a final line without "\n" counts.
func countLines(data []byte) int {
	n := strings.Count(string(data), "\n")
	if len(data) > 0 && data[len(data)-1] != '\n' {
		n++
	}
	return n
}

// TestParseJournalAcceptsCRLF (issue 42): a journal saved with CRLF line
// endings hid every entry it named (each line was refused for its "\r").
// Its lines parse, their keys without the "\r", and a rewrite through
// JournalRecord writes them back with "\n" alone.
func TestParseJournalAcceptsCRLF(t *testing.T) {
	data := "0 sig/ab/cd/alice\r\n5 seal/ab/cd/change-1\r\n0 receipt/00/11/r a\r\n"
	want := []JournalLine{{0, "sig/ab/cd/alice"}, {5, "seal/ab/cd/change-1"}, {0, "receipt/00/11/r a"}}
	for _, parse := range []func(string) ([]JournalLine, BadLines){
		func(s string) ([]JournalLine, BadLines) { return ParseJournal([]byte(s)) },
		ParseJournalText,
	} {
		lines, bad := parse(data)
		if bad.Count != 0 || !slices.Equal(lines, want) {
			t.Errorf("CRLF journal parses as %v (bad %v), want %v", lines, bad.Messages(), want)
		}
	}
	rec := ParseJournalRecord([]byte(data))
	if rec.Bad.Count != 0 || string(rec.Text()) != "0 sig/ab/cd/alice\n5 seal/ab/cd/change-1\n0 receipt/00/11/r a\n" {
		t.Errorf("CRLF journal rewritten as %q (bad %v)", rec.Text(), rec.Bad.Messages())
	}
}
