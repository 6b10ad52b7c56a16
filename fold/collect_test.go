package fold

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/oxyfs/oxyfs/store"
	"github.com/oxyfs/oxyfs/store/format"
	"github.com/oxyfs/oxyfs/testkit/storefixture"
)

func TestCollectDeletesOnlyRetiredOverAnHourAgo(t *testing.T) {
	forBackends(t, func(t *testing.T, st *store.Store, clk *store.FakeClock) {
		ctx := context.Background()
		old := storefixture.WriteList(t, st, false, ekey(format.KindSig, "abcd", "old"))
		edge := storefixture.WriteList(t, st, false, ekey(format.KindSig, "abcd", "edge"))
		fresh := storefixture.WriteList(t, st, false, ekey(format.KindSig, "abcd", "fresh"))
		putRecord(t, st, "pack-0123.pack", "a pack a repack retired")
		gone := "pack-4567.pack" // retired, and deleted by someone already
		putRecord(t, st, format.RetiredKey, fmt.Sprintf("%d %s\n%d %s\n%d pack-0123.pack\n%d %s\n%d %s\n",
			t0, old, t0+1, edge, t0, t0, gone, t0+ms(hour)/2, fresh))
		clk.Set(t0 + ms(hour) + 1) // old and the pack are over an hour old; edge is exactly an hour old
		rep, err := Collect(ctx, st, CollectOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if want := slices.Sorted(slices.Values([]string{old, "pack-0123.pack"})); !slices.Equal(rep.Deleted, want) {
			t.Errorf("deleted %v, want %v", rep.Deleted, want)
		}
		if !slices.Equal(rep.Missing, []string{gone}) {
			t.Errorf("missing %v, want %s", rep.Missing, gone)
		}
		if rep.Waiting != 2 || rep.RetiredLinesDropped != 3 {
			t.Errorf("waiting %d, retired lines dropped %d; want 2 and 3", rep.Waiting, rep.RetiredLinesDropped)
		}
		for _, k := range []string{edge, fresh} {
			if !exists(t, st, k) {
				t.Errorf("%s deleted within its hour", k)
			}
		}
		if exists(t, st, old) {
			t.Errorf("%s not deleted", old)
		}
		text := readRecordText(t, st, format.RetiredKey)
		for _, k := range []string{edge, fresh} {
			if !strings.Contains(text, k) {
				t.Errorf("retired line of %s dropped: %q", k, text)
			}
		}
		if rep.Fold == nil || !rep.Fold.List.Written {
			t.Errorf("collection did not fold: %+v", rep.Fold)
		}
	})
}

func TestCollectDropsFoldedLinesOverAnHourOld(t *testing.T) {
	st, clk := newMem(t)
	a, b, c := ekey(format.KindSeal, "abcd", "a"), ekey(format.KindSeal, "abcd", "b"), ekey(format.KindSeal, "abcd", "c")
	storefixture.PutObjects(t, st, a, b, c)
	storefixture.WriteList(t, st, true, a, b) // the list the folds that marked a and b wrote
	putRecord(t, st, format.JournalKey, fmt.Sprintf("%d %s\n%d %s\n0 %s\n", t0, a, t0+ms(hour), b, c))
	clk.Set(t0 + ms(hour) + 1)
	rep, err := Collect(context.Background(), st, CollectOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if rep.JournalLinesDropped != 1 {
		t.Errorf("dropped %d journal lines, want 1", rep.JournalLinesDropped)
	}
	want := []format.JournalLine{{FoldedAt: t0 + ms(hour), Key: b}, {FoldedAt: t0 + ms(hour) + 1, Key: c}}
	if got := storefixture.ReadJournal(t, st); !slices.Equal(got, want) {
		t.Errorf("journal %v, want %v", got, want)
	}
}

// TestCollectFailsClosedOnListError fails, one at a time, each listing, read
// and compare-and-swap a collection makes before it deletes, and checks that
// nothing was deleted and no record changed.
func TestCollectFailsClosedOnListError(t *testing.T) {
	obj := "abcdef"
	forgotten := ekey(format.KindSig, obj, "alice")
	for _, fault := range []struct {
		name string
		fail func(op, key string) bool
	}{
		{"pack listing", func(op, key string) bool { return op == "list" && key == format.PackPrefix }},
		{"retired record read", func(op, key string) bool { return op == "get" && key == format.RetiredKey }},
		{"journal read", func(op, key string) bool { return op == "get" && key == format.JournalKey }},
		{"listing of a forgotten object", func(op, key string) bool { return op == "list" && strings.HasPrefix(key, "seal/ab/") }},
		{"older list lookup of a forgotten object", func(op, key string) bool { return op == "head" && strings.HasPrefix(key, "receipts/") }},
		{"journal compare-and-swap", func(op, key string) bool { return op == "put" && key == format.JournalKey }},
	} {
		t.Run(fault.name, func(t *testing.T) {
			ctx := context.Background()
			clk := store.NewFakeClock(t0)
			st, fb := newFaultStore(t, clk)
			write(t, st, forgotten, ekey(format.KindSig, "0011", "bob"))
			mustComplete(t, st)
			write(t, st, ekey(format.KindSig, "0011", "carol"))
			mustComplete(t, st) // retires the first list
			clk.Advance(2 * hour)
			before := perObjectKeys(t, st)
			lists := snapshot(t, st).Lists
			journal, retired := readRecordText(t, st, format.JournalKey), readRecordText(t, st, format.RetiredKey)

			fb.failIf(fault.fail)
			start := st.Counts()
			rep, err := Collect(ctx, st, CollectOptions{ForgetObjects: []ForgetObject{{Object: obj}}, Apply: true})
			d := st.Counts().Sub(start)
			fb.failOn("", "")
			if err == nil {
				t.Fatalf("collection succeeded with the %s failing", fault.name)
			}
			if d.Delete != 0 || len(rep.Deleted) != 0 {
				t.Errorf("collection sent %v and reports %v deleted; want no DELETE", d, rep.Deleted)
			}
			if got := perObjectKeys(t, st); !slices.Equal(got, before) {
				t.Errorf("entry keys changed: %v, want %v", got, before)
			}
			if got := snapshot(t, st).Lists; !slices.Equal(got, lists) {
				t.Errorf("lists changed")
			}
			// Step 0 may have retired its forget record (and written it):
			// that line is the one change a failure may leave.
			if readRecordText(t, st, format.JournalKey) != journal || withoutForgetRecords(t, readRecordText(t, st, format.RetiredKey)) != retired {
				t.Errorf("a record changed")
			}
			if !strings.Contains(err.Error(), errInjected.Error()) {
				t.Errorf("error %q does not carry the cause", err)
			}
		})
	}
}

func TestCollectDryRunListsEveryKeyItWouldDelete(t *testing.T) {
	st, clk := newMem(t)
	write(t, st, ekey(format.KindSig, "abcd", "a"))
	first := mustComplete(t, st).List.Name
	write(t, st, ekey(format.KindSig, "abcd", "b"))
	second := mustComplete(t, st).List.Name
	clk.Advance(hour + 1e6)
	forgotten := ekey(format.KindSig, "abcd", "b")
	before := st.Counts()
	rep, err := Collect(context.Background(), st, CollectOptions{DryRun: true, ForgetObjects: []ForgetObject{{Object: "abcd", Kinds: []format.Kind{format.KindSig}}}, Apply: true})
	if err != nil {
		t.Fatal(err)
	}
	if d := st.Counts().Sub(before); d.Put != 0 || d.Delete != 0 {
		t.Errorf("dry run sent %v", d)
	}
	if !slices.Equal(rep.Deleted, []string{first}) || rep.JournalLinesDropped != 2 {
		t.Errorf("dry run: deleted %v, lines %d; want %s and 2 lines", rep.Deleted, rep.JournalLinesDropped, first)
	}
	if !slices.Contains(rep.Forget.Keys, forgotten) || rep.Forget.Applied {
		t.Errorf("dry run forget: %+v", rep.Forget)
	}
	s := rep.String()
	for _, want := range []string{"would delete " + first, forgotten, "dry run"} {
		if !strings.Contains(s, want) {
			t.Errorf("report lacks %q:\n%s", want, s)
		}
	}
	if !exists(t, st, first) || !exists(t, st, second) || !exists(t, st, forgotten) {
		t.Errorf("dry run deleted something")
	}
}

func TestForgetObjectsRemovesKeysAndJournalLines(t *testing.T) {
	forBackends(t, func(t *testing.T, st *store.Store, _ *store.FakeClock) {
		ctx := context.Background()
		obj, other := "abcdef", "abcd"
		gone := []string{ekey(format.KindSig, obj, "alice"), ekey(format.KindSeal, obj, "s"), ekey(format.KindAccepted, obj, "main")}
		kept := []string{ekey(format.KindSig, other, "alice"), ekey(format.KindSig, "abcdef01", "alice")} // a prefix of obj's id is another object
		write(t, st, append(gone, kept...)...)
		mustComplete(t, st)
		write(t, st, gone[0]) // an unfolded line too
		putRecord(t, st, format.LegacyKey(format.KindSig, obj), "alice YQ==\n")

		rep, err := Collect(ctx, st, CollectOptions{ForgetObjects: []ForgetObject{{Object: obj}}, Apply: true})
		if err != nil {
			t.Fatal(err)
		}
		wantKeys := slices.Sorted(slices.Values(append(slices.Clone(gone), format.LegacyKey(format.KindSig, obj))))
		if !slices.Equal(rep.Forget.Keys, wantKeys) || !rep.Forget.Applied || rep.Forget.Lines != 4 || rep.Forget.Deleted != len(wantKeys) {
			t.Errorf("forget %+v, want keys %v and 4 lines", rep.Forget, wantKeys)
		}
		for _, k := range wantKeys {
			if exists(t, st, k) {
				t.Errorf("%s still exists", k)
			}
		}
		for _, l := range storefixture.ReadJournal(t, st) {
			if strings.Contains(l.Key, "/"+obj[:2]+"/"+obj[2:]+"/") {
				t.Errorf("journal still names %s", l.Key)
			}
		}
		list := storefixture.ReadList(t, st, rep.Fold.List.Name)
		if !slices.Equal(list, slices.Sorted(slices.Values(kept))) {
			t.Errorf("the next complete list = %v, want only %v", list, kept)
		}
	})
}

func TestForgetObjectsWithoutApplyOnlyReports(t *testing.T) {
	st, _ := newMem(t)
	k := ekey(format.KindSig, "abcdef", "alice")
	write(t, st, k)
	journal := readRecordText(t, st, format.JournalKey)
	rep, err := Collect(context.Background(), st, CollectOptions{ForgetObjects: []ForgetObject{{Object: "abcdef"}}})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Forget.Applied || !slices.Equal(rep.Forget.Keys, []string{k}) || rep.Forget.Lines != 1 {
		t.Errorf("forget %+v, want %s reported only", rep.Forget, k)
	}
	if !exists(t, st, k) {
		t.Errorf("%s deleted without Apply", k)
	}
	if got := storefixture.ReadJournal(t, st); len(got) != 1 || got[0].Key != k {
		t.Errorf("journal %v (was %q), want its line kept", got, journal)
	}
	if !strings.Contains(rep.String(), "to delete with --apply") {
		t.Errorf("report does not say how to apply:\n%s", rep)
	}
}

func TestCollectNeverDeletesTheRecordsOrTheMarker(t *testing.T) {
	st, clk := newMem(t)
	write(t, st, ekey(format.KindSig, "abcd", "a"))
	mustComplete(t, st)
	putRecord(t, st, format.RetiredKey, fmt.Sprintf("%d %s\n%d %s\n%d %s\n", t0, format.JournalKey, t0, format.LegacyFoldedMarker, t0, format.RetiredKey))
	clk.Advance(3 * hour)
	rep, err := Collect(context.Background(), st, CollectOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Deleted) != 0 || len(rep.Refused) != 3 {
		t.Errorf("deleted %v, refused %v; want nothing deleted and all three refused", rep.Deleted, rep.Refused)
	}
	for _, k := range []string{format.JournalKey, format.LegacyFoldedMarker, format.RetiredKey} {
		if !exists(t, st, k) {
			t.Errorf("%s deleted", k)
		}
	}
}

// TestCollectDeletesOnlyKindsTheRetiredRecordHolds: a corrupt or hostile
// retired record naming entry keys, older lists or operations deletes none
// of them; a retired pack, loose object and raw chunk do go.
func TestCollectDeletesOnlyKindsTheRetiredRecordHolds(t *testing.T) {
	st, clk := newMem(t)
	sig := ekey(format.KindSig, "abcd", "alice")
	write(t, st, sig)
	mustComplete(t, st)
	keep := []string{sig, "sigs/ab/cd", "ops/head", "refs/x", "pack-0a/../sig/ab/cd/alice"}
	gone := []string{"pack-0a.pack", "loose/ab/cdef", "nocompress/ab/cd"}
	var rec strings.Builder
	for _, k := range append(append([]string(nil), keep...), gone...) {
		if k != sig {
			storefixture.PutObjects(t, st, k)
		}
		fmt.Fprintf(&rec, "%d %s\n", t0, k)
	}
	putRecord(t, st, format.RetiredKey, rec.String())
	clk.Advance(3 * hour)
	rep, err := Collect(context.Background(), st, CollectOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range keep {
		if !exists(t, st, k) {
			t.Errorf("%s deleted on the word of the retired record", k)
		}
		if !slices.Contains(rep.Refused, k) {
			t.Errorf("%s not reported as refused: %v", k, rep.Refused)
		}
	}
	for _, k := range gone {
		if exists(t, st, k) {
			t.Errorf("retired %s not deleted", k)
		}
	}
}

func TestParseForgetObject(t *testing.T) {
	for in, want := range map[string]string{
		"abcd":           "abcd",
		"sig:abcd":       "sig:abcd",
		"seal,cert:00ff": "seal,cert:00ff",
	} {
		f, err := ParseForgetObject(in)
		if err != nil || f.String() != want {
			t.Errorf("ParseForgetObject(%q) = %v, %v", in, f, err)
		}
	}
	for _, bad := range []string{"", "abc", "ABCD", "sigs:abcd", "sig:", ":abcd"} {
		if _, err := ParseForgetObject(bad); err == nil {
			t.Errorf("ParseForgetObject(%q) accepted", bad)
		}
	}
}

func TestCollectThatFailsMidwayDropsOnlyTheLinesOfKeysGone(t *testing.T) {
	clk := store.NewFakeClock(t0)
	st, fb := newFaultStore(t, clk)
	putRecord(t, st, "pack-01.pack", "x")
	putRecord(t, st, "pack-02.pack", "y")
	putRecord(t, st, format.RetiredKey, fmt.Sprintf("%d pack-01.pack\n%d pack-02.pack\n", t0, t0))
	clk.Advance(2 * hour)
	fb.failOn("delete", "pack-02")
	rep, err := Collect(context.Background(), st, CollectOptions{})
	fb.failOn("", "")
	if err == nil {
		t.Fatal("collection succeeded although a delete failed")
	}
	// The first failure stops new deletes (internal/lib/par): pack-01's delete
	// may or may not have started. Whatever was deleted, the record keeps
	// exactly the lines of the keys still there.
	if rep.Fold != nil || !(len(rep.Deleted) == 0 || slices.Equal(rep.Deleted, []string{"pack-01.pack"})) {
		t.Errorf("deleted %v, fold %v; want at most pack-01 deleted and no fold after the failure", rep.Deleted, rep.Fold)
	}
	want := ""
	for _, k := range []string{"pack-01.pack", "pack-02.pack"} {
		if gone := slices.Contains(rep.Deleted, k); exists(t, st, k) == gone {
			t.Errorf("%s: reported deleted %v, but it exists: %v", k, gone, !gone)
		}
		if exists(t, st, k) {
			want += fmt.Sprintf("%d %s\n", t0, k)
		}
	}
	if got := readRecordText(t, st, format.RetiredKey); got != want {
		t.Errorf("retired record %q, want only the lines of the keys not deleted: %q", got, want)
	}
}

// withoutForgetRecords drops the lines of forget records from a retired
// record's text.
func withoutForgetRecords(t *testing.T, text string) string {
	t.Helper()
	rec := format.ParseRetiredRecord([]byte(text))
	rec.Lines = slices.DeleteFunc(rec.Lines, func(l format.RecordLine[format.RetiredLine]) bool {
		return !l.Bad() && format.IsForgottenName(l.Line.Key)
	})
	return string(rec.Text())
}
