package fold

import (
	"context"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/oxyfs/oxyfs/store"
	"github.com/oxyfs/oxyfs/store/format"
	"github.com/oxyfs/oxyfs/store/journal"
	"github.com/oxyfs/oxyfs/testkit/storefixture"
)

// mustCheck runs Check and fails the test on an error.
func mustCheck(t *testing.T, st *store.Store) CheckReport {
	t.Helper()
	rep, err := Check(context.Background(), st, CheckOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return rep
}

// problemWith returns the first problem whose text (every key included)
// holds every one of subs, or "".
func problemWith(rep CheckReport, subs ...string) string { return findingWith(rep.Problems, subs...) }

// noteWith is problemWith for the notes.
func noteWith(rep CheckReport, subs ...string) string { return findingWith(rep.Notes, subs...) }

func findingWith(ps []Problem, subs ...string) string {
	for _, p := range ps {
		text := fullText(p)
		if !slices.ContainsFunc(subs, func(s string) bool { return !strings.Contains(text, s) }) {
			return text
		}
	}
	return ""
}

// fullText is a finding's text with every key it holds.
func fullText(p Problem) string { return p.String() + "\n" + strings.Join(p.Keys, "\n") }

// allText is the text of findings, every key included.
func allText(ps []Problem) string {
	var b strings.Builder
	for _, p := range ps {
		b.WriteString(fullText(p) + "\n")
	}
	return b.String()
}

// TestCheckFindsAnEmptySignatureKey (issue 36): a put whose key write hit
// ENOSPC left a 0-byte signature key with its journal line, which a fold
// then listed. check said "OK: no problems".
func TestCheckFindsAnEmptySignatureKey(t *testing.T) {
	forBackends(t, func(t *testing.T, st *store.Store, _ *store.FakeClock) {
		ctx := context.Background()
		write(t, st, ekey(format.KindSig, "abcd", "a"))
		empty := ekey(format.KindSig, "abcd", "empty")
		if err := st.Put(ctx, empty, nil); err != nil {
			t.Fatal(err)
		}
		if _, err := journal.Append(ctx, st, []string{empty}); err != nil {
			t.Fatal(err)
		}
		mustComplete(t, st)
		// An empty index entry is what an index entry is: no problem.
		write(t, st, ekey(format.KindSeal, "abcd", "change-1"))
		rep := mustCheck(t, st)
		if rep.OK() || rep.EmptySignatures != 1 || problemWith(rep, empty, "0 bytes") == "" || len(rep.Problems) != 1 {
			t.Fatalf("check of a store with a 0-byte signature key %s:\n%s", empty, rep)
		}
	})
}

// TestCheckFindsACutJournal (issue 36): a journal a failed write cut in the
// middle of its last line, whose start names another key that exists
// ("…/x" of "…/xy"), parsed whole: check said OK, and the line of xy, and
// any after it, were lost without a word.
func TestCheckFindsACutJournal(t *testing.T) {
	st, _ := newMem(t)
	x, xy := ekey(format.KindSeal, "abcd", "x"), ekey(format.KindSeal, "abcd", "xy")
	write(t, st, x)
	mustComplete(t, st)
	write(t, st, xy)
	text := readRecordText(t, st, format.JournalKey)
	putRecord(t, st, format.JournalKey, strings.TrimSuffix(text, "y\n"))
	rep := mustCheck(t, st)
	if rep.OK() || problemWith(rep, format.JournalKey+" is cut", `"0 `+x+`"`) == "" {
		t.Fatalf("check of a cut journal:\n%s", rep)
	}
	// xy, whose line the cut took, is no longer only waiting for a fold.
	if problemWith(rep, xy, "the journal lost lines") == "" || rep.UnnamedLost != 1 {
		t.Errorf("the key whose line was cut off is not a problem:\n%s", rep)
	}
}

// TestCheckFindsLinesAPartialListProves (issue 36): the journal emptied by a
// failed write, after a partial fold had folded three lines out of it and
// two more were added: the partial list proves the journal lost lines (a
// fold's lines stay an hour), and the two keys no list names are then
// problems, not keys waiting for a fold. check said OK.
func TestCheckFindsLinesAPartialListProves(t *testing.T) {
	forBackends(t, func(t *testing.T, st *store.Store, _ *store.FakeClock) {
		ctx := context.Background()
		write(t, st, ekey(format.KindSig, "0a0b", "base"))
		mustComplete(t, st)
		folded := []string{ekey(format.KindSig, "abcd", "p1"), ekey(format.KindSig, "abcd", "p2"), ekey(format.KindSeal, "abcd", "p3")}
		write(t, st, folded...)
		part, err := journal.Partial(ctx, st)
		if err != nil || part.List == "" || part.Marked != 3 {
			t.Fatalf("partial fold: %+v, %v", part, err)
		}
		unfolded := []string{ekey(format.KindSig, "cdef", "u1"), ekey(format.KindReceipt, "cdef", "u2")}
		write(t, st, unfolded...)
		if rep := mustCheck(t, st); !rep.OK() {
			t.Fatalf("check before the damage:\n%s", rep)
		}
		putRecord(t, st, format.JournalKey, "")
		rep := mustCheck(t, st)
		if rep.OK() || problemWith(rep, "lost lines", part.List, "3 keys", folded[0]) == "" {
			t.Fatalf("check of a journal emptied after a partial fold:\n%s", rep)
		}
		for _, k := range unfolded {
			if problemWith(rep, k, "the journal lost lines") == "" {
				t.Errorf("%s, whose line went with the journal, is not a problem:\n%s", k, rep)
			}
		}
		if rep.Unnamed != 2 || rep.UnnamedLost != 2 {
			t.Errorf("unnamed %d, of which lost %d; want 2 and 2", rep.Unnamed, rep.UnnamedLost)
		}
		// A fold puts it right: every key is listed again. What the
		// partial list proves is then a note: nothing is missing.
		mustComplete(t, st)
		if rep := mustCheck(t, st); !rep.OK() || noteWith(rep, "lost lines", "none is missing now") == "" {
			t.Errorf("check after a complete fold:\n%s", rep)
		}
	})
}

// TestCheckTellsLostLinesFromAnOlderWritersKeys (issue 36): on a folded
// file:// store whose journal was emptied, a key written after the fold
// and more than ClockMargin before the journal's last rewrite lost its line
// (a problem), a key written before the fold that its list lacks was
// missed by the fold's listing (a problem), and a key written since the
// journal's last rewrite may be an older writer's or one whose line is
// being added (a note, as before). check said OK to all three.
func TestCheckTellsLostLinesFromAnOlderWritersKeys(t *testing.T) {
	dir := t.TempDir()
	clk := store.NewFakeClock(t0)
	st := openStore(t, (&url.URL{Scheme: "file", Path: dir}).String(), clk)
	age := func(key string, d time.Duration) {
		t.Helper()
		at := time.Now().Add(-d)
		if err := os.Chtimes(filepath.Join(dir, key), at, at); err != nil {
			t.Fatal(err)
		}
	}
	base := ekey(format.KindSig, "0a0b", "base")
	write(t, st, base)
	list := mustComplete(t, st).List.Name
	age(list, 30*time.Minute)
	missed := ekey(format.KindSeal, "0a0b", "missed-by-the-fold")
	storefixture.PutObjects(t, st, missed)
	age(missed, 40*time.Minute)
	acked := []string{ekey(format.KindSig, "abcd", "k1"), ekey(format.KindApproval, "abcd", "k2")}
	write(t, st, acked...)
	for _, k := range acked {
		age(k, 10*time.Minute)
	}
	if rep := mustCheck(t, st); rep.OK() || len(rep.Problems) != 1 || problemWith(rep, missed, "before the newest complete list") == "" {
		t.Fatalf("check before the journal was emptied: want only %s, which the fold missed:\n%s", missed, rep)
	}
	putRecord(t, st, format.JournalKey, "") // now: 10 minutes after acked
	older := ekey(format.KindReceipt, "abcd", "an-older-writer")
	storefixture.PutObjects(t, st, older)
	rep := mustCheck(t, st)
	for _, k := range acked {
		if problemWith(rep, k, "the journal was rewritten after they were written") == "" {
			t.Errorf("%s, whose line the emptied journal lost, is not a problem", k)
		}
	}
	if problemWith(rep, missed, "the fold's listing missed them") == "" {
		t.Errorf("%s, written before the fold, is not a problem", missed)
	}
	if problemWith(rep, older) != "" || noteWith(rep, CodeEntryWaitingFold, older) == "" {
		t.Errorf("%s, written since the journal's last rewrite, is not noted as waiting", older)
	}
	// One finding per cause: the listing's miss, the journal's rewrite.
	if rep.Unnamed != 4 || rep.UnnamedLost != 3 || len(rep.Problems) != 2 {
		t.Errorf("unnamed %d, lost %d, problems %d; want 4, 3, 2", rep.Unnamed, rep.UnnamedLost, len(rep.Problems))
	}
	if t.Failed() {
		t.Logf("%s", rep)
	}
}

// TestCheckTrustsNoTimeWhileAListIsCorrupt: readers of a store with a live
// list that does not decode list the prefixes instead and miss no key, so
// a key no list names is not called lost, whatever its time.
func TestCheckTrustsNoTimeWhileAListIsCorrupt(t *testing.T) {
	dir := t.TempDir()
	st := openStore(t, (&url.URL{Scheme: "file", Path: dir}).String(), store.NewFakeClock(t0))
	write(t, st, ekey(format.KindSig, "0a0b", "base"))
	list := mustComplete(t, st).List.Name
	older := ekey(format.KindSeal, "0a0b", "older")
	storefixture.PutObjects(t, st, older)
	for name, d := range map[string]time.Duration{list: 30 * time.Minute, older: 40 * time.Minute} {
		at := time.Now().Add(-d)
		if err := os.Chtimes(filepath.Join(dir, name), at, at); err != nil {
			t.Fatal(err)
		}
	}
	if rep := mustCheck(t, st); problemWith(rep, older, "the fold's listing missed them") == "" {
		t.Fatalf("the key the fold missed is not a problem:\n%s", rep)
	}
	putRecord(t, st, "pack-"+strings.Repeat("0", 64)+".entries-part", "not zstd")
	rep := mustCheck(t, st)
	// The key is a follow-on of the corrupt list, under it, not lost.
	if problemWith(rep, CodeEntryUnlisted) != "" || problemWith(rep, CodeListCorrupt, "does not decode", "follow-on: 1 per-object keys", older) == "" || rep.UnnamedLost != 0 {
		t.Errorf("with a corrupt live list, %s is still called lost, or the list is not reported:\n%s", older, rep)
	}
}
