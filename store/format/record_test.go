package format

import (
	"bytes"
	"slices"
	"strings"
	"testing"
)

// normalised is what AppendText writes for data, by the three documented
// normalisations, computed line by line without the record types: blank
// lines dropped, every line ending in "\n", and a line that parses (parsed
// reports whether it does) with its time's leading zeros dropped.
func normalised(data []byte, parsed func(string) bool) string {
	var b strings.Builder
	for line := range strings.Lines(string(data)) {
		line = strings.TrimSuffix(line, "\n")
		if line == "" {
			continue
		}
		if parsed(line) {
			num, key, _ := strings.Cut(strings.TrimSuffix(line, "\r"), " ")
			if num = strings.TrimLeft(num, "0"); num == "" {
				num = "0"
			}
			line = num + " " + key
		}
		b.WriteString(line + "\n")
	}
	return b.String()
}

var recordSeeds = []string{
	"", "\n", "\n\n", "0 sig/ab/cd/alice\n", "0 sig/ab/cd/alice", "1 seal/00/11/a b\n0 cert/ff/ee/x\n",
	"0 sig/ab/cd/alice\r\n", "x sig/ab/cd/a\n", "-1 sig/ab/cd/a\n", "0\n", "0 \n", " \n", "\r",
	"99999999999999999999 sig/ab/cd/a\n", "9223372036854775807 pack-a.pack\n", "9223372036854775808 pack-a.pack\n",
	"0 sig/ab/cd/a/b\n", "007 sig/ab/cd/a\n", "00 pack-x\n", "1 pack-a.pack\ngarbage\n\n2 pack-b.pack",
	"1 a b\n", "1 a\x00\n", "1 \xff\n", "1 pack-a.pack\n007 pack-b.pa", "5 pack-a.pack\n\n12",
}

// FuzzJournalRecordRoundTrip: ParseJournalRecord then AppendText gives the
// input back but for the normalisations AppendText documents; the lines
// that do not parse are counted, blank ones included, and those not blank
// are kept in place; the rewrite parses to the same record, with no blank
// line left.
func FuzzJournalRecordRoundTrip(f *testing.F) {
	for _, s := range recordSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		rec := ParseJournalRecord(data)
		got := rec.AppendText([]byte("x"))
		want := "x" + normalised(data, func(l string) bool { _, err := ParseJournalLine(l); return err == nil })
		if string(got) != want {
			t.Fatalf("AppendText of %q = %q, want %q", data, got, want)
		}
		if !bytes.Equal(rec.Text(), got[1:]) {
			t.Fatalf("Text %q != AppendText %q", rec.Text(), got[1:])
		}
		lines, bad := ParseJournal(data)
		if bad.Count != rec.Bad.Count || len(lines)+bad.Count != countLines(data) {
			t.Fatalf("%d parsed + %d bad; ParseJournal: %d + %d of %d lines", len(rec.Lines)-rec.Bad.Count, rec.Bad.Count, len(lines), bad.Count, countLines(data))
		}
		var parsed []JournalLine
		for _, l := range rec.Lines {
			if !l.Bad() {
				parsed = append(parsed, l.Line)
			} else if l.Line != (JournalLine{}) || strings.Contains(l.Raw, "\n") {
				t.Fatalf("bad line %+v", l)
			}
		}
		if !slices.Equal(parsed, lines) {
			t.Fatalf("record's parsed lines %v, ParseJournal %v", parsed, lines)
		}
		again := ParseJournalRecord(got[1:])
		if string(again.Text()) != string(got[1:]) || len(again.Lines) != len(rec.Lines) {
			t.Fatalf("rewrite %q reads back as %q", got[1:], again.Text())
		}
	})
}

// FuzzRetiredRecordRoundTrip is FuzzJournalRecordRoundTrip for the retired
// record.
func FuzzRetiredRecordRoundTrip(f *testing.F) {
	for _, s := range recordSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		rec := ParseRetiredRecord(data)
		got := rec.AppendText(nil)
		// A cut last line is bad, so kept as read (and ended).
		body, tail := data, ""
		if i := bytes.LastIndexByte(data, '\n') + 1; i < len(data) {
			body, tail = data[:i], string(data[i:])+"\n"
		}
		want := normalised(body, func(l string) bool { _, err := ParseRetiredLine(l); return err == nil }) + tail
		if string(got) != want || string(rec.Text()) != want {
			t.Fatalf("AppendText of %q = %q, Text %q, want %q", data, got, rec.Text(), want)
		}
		lines, bad := ParseRetired(data)
		if bad.Count != rec.Bad.Count {
			t.Fatalf("%d bad; ParseRetired %d", rec.Bad.Count, bad.Count)
		}
		var parsed []RetiredLine
		for _, l := range rec.Lines {
			if !l.Bad() {
				parsed = append(parsed, l.Line)
			}
		}
		if !slices.Equal(parsed, lines) {
			t.Fatalf("record's parsed lines %v, ParseRetired %v", parsed, lines)
		}
	})
}

func TestRecordKeepsBadLinesInPlace(t *testing.T) {
	data := "5 pack-a.pack\ngarbage\n\n007 pack-b.pack\n1 two words\n6 pack-c.pack\n"
	rec := ParseRetiredRecord([]byte(data))
	if rec.Bad.Count != 3 || len(rec.Lines) != 5 {
		t.Fatalf("bad %d, lines %d; want 3 bad (garbage, blank, a space in the key), 5 lines kept", rec.Bad.Count, len(rec.Lines))
	}
	rec.Lines = rec.Lines[1:] // drop "5 pack-a.pack"
	rec.Add(RetiredLine{RetiredAt: 9, Key: "pack-d.pack"})
	want := "garbage\n7 pack-b.pack\n1 two words\n6 pack-c.pack\n9 pack-d.pack\n"
	if got := string(rec.Text()); got != want {
		t.Errorf("Text = %q, want %q", got, want)
	}
	j := ParseJournalRecord([]byte("junk\n0 sig/ab/cd/a"))
	j.Add(JournalLine{FoldedAt: 3, Key: "sig/ab/cd/b"})
	if got, want := string(j.AppendText([]byte("> "))), "> junk\n0 sig/ab/cd/a\n3 sig/ab/cd/b\n"; got != want {
		t.Errorf("AppendText = %q, want %q", got, want)
	}
}

func TestAppendLine(t *testing.T) {
	if got, want := string(AppendLine([]byte("x"), 1700000000000, "pack-a.pack")), "x1700000000000 pack-a.pack\n"; got != want {
		t.Errorf("AppendLine = %q, want %q", got, want)
	}
}

func TestLineTime(t *testing.T) {
	for _, tc := range []struct {
		line string
		ms   int64
		ok   bool
	}{
		{"0 k", 0, true},
		{"007 k", 7, true},
		{"9223372036854775807 k", 1<<63 - 1, true},
		{"9223372036854775808 k", 0, false},
		{"99999999999999999999 k", 0, false},
		{"0000000000000000000000001 k", 1, true},
		{"12", 0, false},
		{" k", 0, false},
		{"-1 k", 0, false},
		{"+1 k", 0, false},
		{"1x k", 0, false},
		{"", 0, false},
	} {
		ms, ok := LineTime(tc.line)
		bms, bok := LineTime([]byte(tc.line))
		if ms != tc.ms || ok != tc.ok || bms != ms || bok != ok {
			t.Errorf("LineTime(%q) = %d, %v (bytes: %d, %v); want %d, %v", tc.line, ms, ok, bms, bok, tc.ms, tc.ok)
		}
		// The parsers of whole lines read the field by the same rule.
		l, err := ParseRetiredLine(tc.line)
		if (err == nil) != tc.ok || l.RetiredAt != tc.ms {
			t.Errorf("ParseRetiredLine(%q) = %+v, %v; want time %d, ok %v", tc.line, l, err, tc.ms, tc.ok)
		}
	}
}

func TestHourRules(t *testing.T) {
	const t0, hourMs = int64(1_700_000_000_000), int64(3_600_000)
	for _, tc := range []struct {
		at, now       int64
		retiredOver   bool
		journalExpire bool
	}{
		{t0, t0, false, false},
		{t0, t0 + hourMs, false, false}, // exactly an hour: kept
		{t0, t0 + hourMs + 1, true, true},
		{t0, t0 - 5, false, false}, // a clock behind
		{0, t0, true, false},       // an unfolded journal line never expires
	} {
		if got := RetiredOverAnHourAgo(tc.at, tc.now); got != tc.retiredOver {
			t.Errorf("RetiredOverAnHourAgo(%d, %d) = %v", tc.at, tc.now, got)
		}
		if got := JournalLineExpired(tc.at, tc.now); got != tc.journalExpire {
			t.Errorf("JournalLineExpired(%d, %d) = %v", tc.at, tc.now, got)
		}
		if got := (JournalLine{FoldedAt: tc.at, Key: "k"}).Expired(tc.now); got != tc.journalExpire {
			t.Errorf("Expired(%d, %d) = %v", tc.at, tc.now, got)
		}
	}
	if due := RetiredDueAt(t0); RetiredOverAnHourAgo(t0, due-1) || !RetiredOverAnHourAgo(t0, due) {
		t.Errorf("RetiredDueAt(%d) = %d is not the first ms past the hour", t0, due)
	}
}
