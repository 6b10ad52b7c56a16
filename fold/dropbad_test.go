package fold

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/oxyfs/oxyfs/store"
	"github.com/oxyfs/oxyfs/store/format"
	"github.com/oxyfs/oxyfs/store/journal"
)

// TestCRLFJournalHidesNoEntry (issue 42 item 2): a journal saved with CRLF
// line endings hid every entry it named from readers (each line refused
// for its "\r"), and check failed on it forever. Its lines now parse: a
// reader finds the entries, and check passes.
func TestCRLFJournalHidesNoEntry(t *testing.T) {
	forBackends(t, func(t *testing.T, st *store.Store, _ *store.FakeClock) {
		ctx := context.Background()
		write(t, st, ekey(format.KindSig, "abcd", "base"))
		mustComplete(t, st)
		added := []string{ekey(format.KindSig, "abcd", "a"), ekey(format.KindSeal, "abcd", "s1"), ekey(format.KindReceipt, "0a0b", "r 1")}
		write(t, st, added...)
		text := readRecordText(t, st, format.JournalKey)
		putRecord(t, st, format.JournalKey, strings.ReplaceAll(text, "\n", "\r\n"))
		v, err := freshReader(ctx, st)
		if err != nil {
			t.Fatal(err)
		}
		for _, k := range added {
			if !v.keys[k] {
				t.Errorf("a reader of the CRLF journal misses %s", k)
			}
		}
		if rep := mustCheck(t, st); !rep.OK() {
			t.Errorf("check of a CRLF journal:\n%s", rep)
		}
	})
}

// TestDropMalformedMovesBadLinesOut (issue 42 item 2): a garbage line in
// the journal (and the retired record) made check fail forever, and the
// only fix was to hand-edit a record others update by compare-and-swap.
// fold --drop-malformed saves the lines, then removes them; a line another
// writer appends while it runs (a lost race) stays, and no line is saved
// twice; check then passes.
func TestDropMalformedMovesBadLinesOut(t *testing.T) {
	forBackends(t, func(t *testing.T, st *store.Store, _ *store.FakeClock) {
		ctx := context.Background()
		base := ekey(format.KindSig, "abcd", "base")
		write(t, st, base)
		mustComplete(t, st)
		k := ekey(format.KindSeal, "abcd", "s1")
		write(t, st, k)
		text := readRecordText(t, st, format.JournalKey)
		putRecord(t, st, format.JournalKey, "garbage\n"+text+"0 sig/ab/cd/a/b\n\n")
		putRecord(t, st, format.RetiredKey, readRecordText(t, st, format.RetiredKey)+"soon pack-x\n")
		if rep := mustCheck(t, st); rep.OK() || problemWith(rep, CodeJournalMalformedLine, "oxyfs fold --drop-malformed") == "" ||
			problemWith(rep, CodeRetiredMalformedLine) == "" {
			t.Fatalf("check of the damaged journal:\n%s", rep)
		}

		// A dry run names the lines and changes nothing.
		before := readRecordText(t, st, format.JournalKey)
		rep, err := Complete(ctx, st, Options{DryRun: true, DropMalformed: true})
		if err != nil || rep.DroppedMalformed == nil || !slices.Equal(rep.DroppedMalformed.Journal, []string{"garbage", "0 sig/ab/cd/a/b"}) ||
			!slices.Equal(rep.DroppedMalformed.Retired, []string{"soon pack-x"}) || readRecordText(t, st, format.JournalKey) != before {
			t.Fatalf("dry run: %v\n%s", err, rep)
		}

		// Another writer appends a line between the repair's read and its
		// write: the first save runs before the write, so the append lands
		// first and the repair's write loses the race.
		other := ekey(format.KindSig, "0a0b", "other")
		var saved []string
		raced := false
		save := func(record string, lines []string) error {
			saved = append(saved, lines...)
			if !raced && record == format.JournalKey {
				raced = true
				write(t, st, other)
			}
			return nil
		}
		rep, err = Complete(ctx, st, Options{DropMalformed: true, SaveDropped: save})
		if err != nil {
			t.Fatal(err)
		}
		if !raced || rep.DroppedMalformed.CASTries < 3 {
			t.Errorf("the race did not happen: %d tries for two records", rep.DroppedMalformed.CASTries)
		}
		if want := []string{"garbage", "0 sig/ab/cd/a/b", "soon pack-x"}; !slices.Equal(saved, want) {
			t.Errorf("saved %q, want each bad line once: %q", saved, want)
		}
		lines, bad := format.ParseJournal([]byte(readRecordText(t, st, format.JournalKey)))
		if bad.Count != 0 || !slices.ContainsFunc(lines, func(l format.JournalLine) bool { return l.Key == other }) {
			t.Errorf("journal after the repair: %v, bad %v; the line of %s appended meanwhile must stay", lines, bad.Messages(), other)
		}
		if crep := mustCheck(t, st); !crep.OK() {
			t.Errorf("check after fold --drop-malformed:\n%s", crep)
		}
		// Nothing left to drop: the records are not written again.
		rep, err = Complete(ctx, st, Options{DropMalformed: true, SaveDropped: func(string, []string) error { t.Error("saved again"); return nil }})
		if err != nil || len(rep.DroppedMalformed.Rewritten) != 0 {
			t.Errorf("second repair: %v, %+v", err, rep.DroppedMalformed)
		}
	})
}

// TestDropMalformedSavesBeforeItDrops: a save that fails ends the repair
// with the records untouched.
func TestDropMalformedSavesBeforeItDrops(t *testing.T) {
	st, _ := newMem(t)
	write(t, st, ekey(format.KindSig, "abcd", "a"))
	putRecord(t, st, format.JournalKey, readRecordText(t, st, format.JournalKey)+"garbage\n")
	before := readRecordText(t, st, format.JournalKey)
	_, err := Complete(context.Background(), st, Options{DropMalformed: true, SaveDropped: func(string, []string) error { return store.ErrTooLarge }})
	if err == nil || readRecordText(t, st, format.JournalKey) != before {
		t.Fatalf("a failed save: %v; journal %q, want %q", err, readRecordText(t, st, format.JournalKey), before)
	}
	if _, err := journal.Append(context.Background(), st, []string{ekey(format.KindSig, "abcd", "a")}); err != nil {
		t.Fatal(err)
	}
}

// FuzzSplitJournal: what --drop-malformed writes back keeps every line
// that parses, in order (a CRLF line included), and nothing else; what it
// drops is exactly the lines that do not parse but blank ones, verbatim.
func FuzzSplitJournal(f *testing.F) {
	for _, s := range []string{"", "0 sig/ab/cd/a\n", "0 sig/ab/cd/a\r\ngarbage\r\n\n5 seal/ab/cd/x", "\r\n", "x", "0 sig/ab/cd/a\r\r\n"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		text, bad, changed := splitJournal(slices.Clone(data))
		want, wantBad := format.ParseJournal(data)
		got, gotBad := format.ParseJournal(text)
		if gotBad.Count != 0 || !slices.Equal(got, want) {
			t.Fatalf("rewrite of %q is %q: lines %v (bad %v), want %v", data, text, got, gotBad.Messages(), want)
		}
		blank := 0
		for l := range strings.Lines(string(data)) {
			if strings.TrimSuffix(l, "\n") == "" {
				blank++
			}
		}
		if len(bad) != wantBad.Count-blank {
			t.Fatalf("dropped %q of %q; want the %d lines that do not parse, blank ones aside", bad, data, wantBad.Count-blank)
		}
		if changed != (wantBad.Count > 0 || (len(data) > 0 && data[len(data)-1] != '\n')) {
			t.Fatalf("changed %v for %q", changed, data)
		}
	})
}

// TestReportClipsLongBadLine: a 10 MB garbage line in the journal was
// printed whole by fold --drop-malformed's report (and its dry run) on
// stdout; the report names it by its first bytes, as the warnings do.
func TestReportClipsLongBadLine(t *testing.T) {
	long := "0 " + strings.Repeat("a", 1<<20)
	rep := Report{DroppedMalformed: &DroppedLines{Journal: []string{long}, Retired: []string{long}}, ListMalformed: []string{long}}
	for _, dry := range []bool{false, true} {
		rep.DryRun = dry
		out := rep.String()
		if strings.Contains(out, long) || len(out) > len(long)/2 {
			t.Errorf("dry run %v: the report prints the long line whole (%d bytes)", dry, len(out))
		}
		if !strings.Contains(out, long[:100]) {
			t.Errorf("dry run %v: the report does not name the line by its first bytes:\n%.400s", dry, out)
		}
	}
}

// TestDropMalformedDryRunSaysOneThing: the dry run of fold
// --drop-malformed listed each bad line twice, "to move out" and then
// "kept as is" (its fold step read the record the real run would have
// cleaned); it now says only what the real run does: moves them out.
func TestDropMalformedDryRunSaysOneThing(t *testing.T) {
	st, _ := newMem(t)
	write(t, st, ekey(format.KindSig, "abcd", "a"))
	putRecord(t, st, format.JournalKey, readRecordText(t, st, format.JournalKey)+"garbage\n")
	putRecord(t, st, format.RetiredKey, "soon pack-x\n")
	rep, err := Complete(context.Background(), st, Options{DryRun: true, DropMalformed: true})
	if err != nil || rep.DroppedMalformed == nil || len(rep.DroppedMalformed.Journal) != 1 || len(rep.DroppedMalformed.Retired) != 1 {
		t.Fatalf("dry run: %v\n%s", err, rep)
	}
	if len(rep.JournalBad) != 0 || len(rep.RetiredBad) != 0 || strings.Contains(rep.String(), "kept as is") {
		t.Errorf("the dry run says the lines it moves out are kept:\n%s", rep)
	}
	// Without --drop-malformed, a dry run says they are kept.
	if rep, err := Complete(context.Background(), st, Options{DryRun: true}); err != nil || len(rep.JournalBad) != 1 || len(rep.RetiredBad) != 1 {
		t.Errorf("dry run without --drop-malformed: %v\n%s", err, rep)
	}
}
