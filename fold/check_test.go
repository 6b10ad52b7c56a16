package fold

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/oxyfs/oxyfs/internal/storefixture"
	"github.com/oxyfs/oxyfs/store"
	"github.com/oxyfs/oxyfs/store/format"
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
	all := strings.Join(rep.Problems, "\n")
	if !strings.Contains(all, "names "+b+", which does not exist") {
		t.Errorf("problems do not name the missing list key %s:\n%s", b, all)
	}
	if !strings.Contains(all, "journal names "+b) {
		t.Errorf("problems do not name the missing journal key:\n%s", all)
	}
	notes := strings.Join(rep.Notes, "\n")
	if !strings.Contains(notes, older+" is waiting for a fold") {
		t.Errorf("notes do not name the unjournaled key %s:\n%s", older, notes)
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
	all := strings.Join(rep.Problems, "\n")
	for _, want := range []string{"verify entry list " + name, ".entries-part", `"garbage"`, "retired-at", `malformed entry key "cert/ab/cd/x/y"`} {
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
	notes := strings.Join(rep.Notes, "\n")
	for _, want := range []string{"not folded", "1 per-object keys are in no list", "older one-list keys", "pack-gone.pack is gone already", "over 1h0m0s old"} {
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
	waiting := 0
	for _, n := range rep.Notes {
		if strings.Contains(n, "waiting for a fold") {
			waiting++
		}
	}
	if waiting != 3 || !strings.Contains(strings.Join(rep.Notes, "\n"), "and 4 more") {
		t.Errorf("notes not capped at 3:\n%s", strings.Join(rep.Notes, "\n"))
	}
}
