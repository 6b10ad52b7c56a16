package format

import (
	"strings"
	"testing"

	"github.com/oxyfs/oxyfs/testkit/memtest"
)

func TestParseJournalCountsJunkAndKeepsTenExamples(t *testing.T) {
	const n = 2_000_000
	data := []byte("0 sig/ab/cd/alice\n" + strings.Repeat("junk\n", n))
	var lines []JournalLine
	var bad BadLines
	peak := memtest.Peak(func() { lines, bad = ParseJournal(data) })
	if len(lines) != 1 || lines[0].Key != "sig/ab/cd/alice" {
		t.Errorf("lines = %v", lines)
	}
	if bad.Count != n || len(bad.First) != MaxBadLineSamples || bad.First[0].Line != 2 || bad.First[9].Line != 11 {
		t.Fatalf("bad = %d lines, %d examples, first %v", bad.Count, len(bad.First), bad.First[0])
	}
	msgs := bad.Messages()
	want := []string{`line 2 "junk": no space between the time and the key`}
	if len(msgs) != 11 || msgs[0] != want[0] || msgs[10] != "and 1999990 more lines that do not parse" {
		t.Errorf("Messages = %d: %q … %q", len(msgs), msgs[0], msgs[len(msgs)-1])
	}
	// One copy of the 10 MB text, nothing per bad line.
	if peak > 24*memtest.MiB {
		t.Errorf("parsing 2 million junk lines took %d MiB of heap, want < 24", peak/memtest.MiB)
	}
}

func TestParseRetiredCountsJunkAndKeepsTenExamples(t *testing.T) {
	const n = 2_000_000
	data := []byte(strings.Repeat("x y\n", n) + "5 pack-1.pack\n")
	var lines []RetiredLine
	var bad BadLines
	peak := memtest.Peak(func() { lines, bad = ParseRetired(data) })
	if len(lines) != 1 || lines[0] != (RetiredLine{RetiredAt: 5, Key: "pack-1.pack"}) {
		t.Errorf("lines = %v", lines)
	}
	if bad.Count != n || len(bad.First) != MaxBadLineSamples {
		t.Fatalf("bad = %d lines, %d examples", bad.Count, len(bad.First))
	}
	if peak > 24*memtest.MiB {
		t.Errorf("parsing 2 million junk lines took %d MiB of heap, want < 24", peak/memtest.MiB)
	}
}

func TestParseLegacyListsCountJunkAndKeepTenExamples(t *testing.T) {
	junk := []byte(strings.Repeat("a/b\n", 100) + "ok\n")
	if vals, bad := ParseLegacyValues(junk); len(vals) != 1 || bad.Count != 100 || len(bad.First) != MaxBadLineSamples {
		t.Errorf("ParseLegacyValues = %q, %d bad, %d examples", vals, bad.Count, len(bad.First))
	}
	if sigs, bad := ParseLegacySigs(junk); len(sigs) != 0 || bad.Count != 101 || len(bad.First) != MaxBadLineSamples {
		t.Errorf("ParseLegacySigs = %v, %d bad, %d examples", sigs, bad.Count, len(bad.First))
	}
}
