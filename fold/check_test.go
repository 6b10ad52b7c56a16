package fold

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/oxyfs/oxyfs/store"
	"github.com/oxyfs/oxyfs/store/format"
	"github.com/oxyfs/oxyfs/testkit/storefixture"
)

func TestCheckPassesOnAFoldedStore(t *testing.T) {
	forBackends(t, func(t *testing.T, st *store.Store, _ *store.FakeClock) {
		write(t, st, ekey(format.KindSig, "abcd", "a"), ekey(format.KindReceipt, "abcd", "r"))
		mustComplete(t, st)
		write(t, st, ekey(format.KindSig, "abcd", "b"))
		rep, err := Check(context.Background(), st, CheckOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if !rep.OK() || !rep.Folded || rep.Entries != 3 || rep.ListEntries != 2 || rep.JournalUnfolded != 1 {
			t.Errorf("check of a sound store:\n%s", rep)
		}
		if !strings.Contains(rep.String(), "OK: no problems") {
			t.Errorf("report:\n%s", rep)
		}
	})
}

func TestCheckReportsUnjournaledKeysAndMissingListKeys(t *testing.T) {
	st, _ := newMem(t)
	ctx := context.Background()
	a, b := ekey(format.KindSig, "abcd", "a"), ekey(format.KindSig, "abcd", "b")
	write(t, st, a, b)
	mustComplete(t, st)
	older := ekey(format.KindSeal, "abcd", "by-an-older-writer")
	storefixture.PutObjects(t, st, older)     // no journal line
	if err := st.Delete(ctx, b); err != nil { // the list names it, yet it is gone
		t.Fatal(err)
	}
	rep, err := Check(ctx, st, CheckOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if rep.OK() {
		t.Fatalf("check found no problem:\n%s", rep)
	}
	// b is named by the list and the journal: one finding, the journal's
	// (its fix is the one that clears both).
	if len(rep.Problems) != 1 || problemWith(rep, CodeEntryMissingKey, "journal "+format.JournalKey+" names keys", b) == "" {
		t.Errorf("problems do not name the missing key %s once:\n%s", b, rep)
	}
	// A key only a list names is the list's finding.
	c := ekey(format.KindSig, "abcd", "c")
	storefixture.WriteList(t, st, true, a, c)
	rep, err = Check(ctx, st, CheckOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if problemWith(rep, CodeEntryMissingKey, "list pack-", "names keys that do not exist", c) == "" {
		t.Errorf("problems do not name the missing list key %s:\n%s", c, rep)
	}
	if noteWith(rep, CodeEntryWaitingFold, older) == "" {
		t.Errorf("notes do not name the unjournaled key %s:\n%s", older, rep)
	}
}

func TestCheckReportsCorruptListsAndBadLines(t *testing.T) {
	st, _ := newMem(t)
	write(t, st, ekey(format.KindSig, "abcd", "a"))
	name := mustComplete(t, st).List.Name
	_, good, _ := format.EncodeEntryList([]string{ekey(format.KindSig, "abcd", "zzz")})
	putRecord(t, st, name, string(good)) // the content of another set under this name
	putRecord(t, st, "pack-"+strings.Repeat("0", 64)+".entries-part", "not zstd")
	putRecord(t, st, format.JournalKey, readRecordText(t, st, format.JournalKey)+"garbage\n")
	putRecord(t, st, format.RetiredKey, "soon pack-x\n")
	storefixture.PutObjects(t, st, "cert/ab/cd/x/y")
	rep, err := Check(context.Background(), st, CheckOptions{})
	if err != nil {
		t.Fatal(err)
	}
	all := allText(rep.Problems)
	for _, want := range []string{"verify entry list " + name, ".entries-part", `"garbage"`, "retired-at", CodeEntryKeyMalformed + ": ", "\ncert/ab/cd/x/y"} {
		if !strings.Contains(all, want) {
			t.Errorf("problems lack %q:\n%s", want, all)
		}
	}
}

func TestCheckNotesAStoreNotYetFolded(t *testing.T) {
	st, clk := newMem(t)
	write(t, st, ekey(format.KindSig, "abcd", "a"))
	storefixture.PutObjects(t, st, ekey(format.KindSig, "abcd", "older"))
	putRecord(t, st, "sigs/ab/cdef", "x YQ==\n")
	putRecord(t, st, format.RetiredKey, fmt.Sprintf("%d pack-gone.pack\n", t0))
	clk.Advance(2 * hour)
	rep, err := Check(context.Background(), st, CheckOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !rep.OK() || rep.Folded {
		t.Fatalf("unfolded store:\n%s", rep)
	}
	notes := allText(rep.Notes)
	for _, want := range []string{"not folded", "1 per-object keys are in no list", "older one-list keys", "retired keys are gone already", "\npack-gone.pack", "over 1h0m0s old"} {
		if !strings.Contains(notes, want) {
			t.Errorf("notes lack %q:\n%s", want, notes)
		}
	}
}

func TestCheckCapsLongFindings(t *testing.T) {
	st, _ := newMem(t)
	mustComplete(t, st)
	for i := range 7 {
		storefixture.PutObjects(t, st, ekey(format.KindSig, "abcd", fmt.Sprint(i)))
	}
	rep, err := Check(context.Background(), st, CheckOptions{MaxItems: 3})
	if err != nil {
		t.Fatal(err)
	}
	// One finding for the cause, naming 3 of its 7 keys.
	if len(rep.Notes) != 1 || rep.Notes[0].Code != CodeEntryWaitingFold || rep.Notes[0].Count != 7 || len(rep.Notes[0].Keys) != 3 {
		t.Errorf("notes not one finding of 7 keys naming 3:\n%s", rep)
	}
}
