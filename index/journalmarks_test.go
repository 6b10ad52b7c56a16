package index

import (
	"context"
	"maps"
	"runtime"
	"slices"
	"testing"
	"time"

	"github.com/oxyfs/oxyfs/store"
	"github.com/oxyfs/oxyfs/store/format"
	"github.com/oxyfs/oxyfs/store/storegen"
	"github.com/oxyfs/oxyfs/testkit/storefixture"
)

// journalMarks lists what a view keeps of the journal: each marked entry's
// key and, for signatures, its counts.
func journalMarks(v *view) map[string]jcount {
	out := map[string]jcount{}
	jv := v.journal
	for k := range format.NumKinds {
		ks := &jv.set.kinds[k]
		jv.each(format.Kind(k), func(i, j int) {
			e := format.Entry{Kind: format.Kind(k), Object: hexString(ks.obj(i)), Value: jv.set.vt.str(ks.vals[j])}
			c := oneFolded
			if format.Kind(k) == format.KindSig {
				c = jv.count(j)
			}
			out[e.Key()] = c
		})
	}
	return out
}

// entrySources lists every entry the index shows with the source Stat
// gives it.
func entrySources(t *testing.T, ix *Index) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, p := range walkEntries(t, ix) {
		n, err := ix.Stat(context.Background(), p)
		if err != nil {
			t.Fatalf("Stat %q: %v", p, err)
		}
		out[p] = n.Source
	}
	return out
}

// sameAsAFreshOpen checks that ix shows exactly what a new handle on st
// shows: the entries and their sources, the counts Status reports, the
// set's bytes and the journal's marks.
func sameAsAFreshOpen(t *testing.T, ix *Index, st *store.Store) {
	t.Helper()
	fresh, _ := openIndex(t, otherHandle(st))
	if err := fresh.Load(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got, want := entrySources(t, ix), entrySources(t, fresh); !maps.Equal(got, want) {
		t.Fatalf("the refreshed handle shows\n%v\na fresh open shows\n%v", got, want)
	}
	g, w := ix.Status(), fresh.Status()
	type counts struct {
		Mode                              string
		Lines, Folded, Entries, Malformed int
		PerKind                           map[string]int
		Memory                            int64
		Live                              []store.ListInfo
	}
	gc := counts{g.Mode, g.JournalLines, g.JournalFolded, g.Entries, g.Malformed, g.EntriesPerKind, g.MemoryBytes, g.LiveLists}
	wc := counts{w.Mode, w.JournalLines, w.JournalFolded, w.Entries, w.Malformed, w.EntriesPerKind, w.MemoryBytes, w.LiveLists}
	if gc.Mode != wc.Mode || gc.Lines != wc.Lines || gc.Folded != wc.Folded || gc.Entries != wc.Entries || gc.Malformed != wc.Malformed ||
		!maps.Equal(gc.PerKind, wc.PerKind) || gc.Memory != wc.Memory || !slices.Equal(gc.Live, wc.Live) {
		t.Fatalf("status of the refreshed handle %+v, of a fresh open %+v", gc, wc)
	}
	if got, want := journalMarks(ix.v.Load()), journalMarks(fresh.v.Load()); !maps.Equal(got, want) {
		t.Fatalf("journal marks of the refreshed handle\n%v\nof a fresh open\n%v", got, want)
	}
}

// TestRefreshWithAnUnchangedJournalAndNewListsShowsAFreshOpen: the lists
// change (a complete fold wrote a list and retired the reader's; its mark
// has not landed) while the journal stays the same bytes. The refresh gets
// no journal lines back from the conditional GET, and the view kept none:
// the journal's entries come from the view's marks. The new list holds
// none of the journal's keys, so any journal entry lost on the way would
// vanish from the tree. The refresh must show exactly what a fresh open
// shows, for no request more than a refresh that reads one new list.
func TestRefreshWithAnUnchangedJournalAndNewListsShowsAFreshOpen(t *testing.T) {
	ctx := context.Background()
	st := storefixture.NewMem(t)
	a := storefixture.Ent(format.KindSig, objA, "alice")  // in both lists, no line
	b := storefixture.Ent(format.KindSig, objB, "bob")    // in the first list, one folded line
	c := storefixture.Ent(format.KindSeal, objC, "s1")    // one unfolded line, in no list
	d := storefixture.Ent(format.KindReceipt, objD, "r1") // one folded line, in no list
	e := storefixture.Ent(format.KindSig, objA, "carol")  // replaced: a folded and an unfolded line, in no list
	f := storefixture.Ent(format.KindCert, objC, "k1")    // only in the second list
	storefixture.PutEntries(t, st, a, b, c, d, e, f)
	first := storefixture.WriteEntryList(t, st, true, a, b)
	storefixture.WriteJournalText(t, st, string(format.Journal([]format.JournalLine{
		{FoldedAt: 5, Key: b.Key()}, {Key: c.Key()}, {FoldedAt: 5, Key: d.Key()},
		{FoldedAt: 5, Key: e.Key()}, {Key: e.Key()},
	})))
	reader, _ := openIndex(t, st)
	if err := reader.Load(ctx); err != nil {
		t.Fatal(err)
	}
	sameAsAFreshOpen(t, reader, st)
	if got := journalMarks(reader.v.Load()); !maps.Equal(got, map[string]jcount{
		b.Key(): {1, 0}, c.Key(): {1, 0}, d.Key(): {1, 0}, e.Key(): {2, 1},
	}) {
		t.Fatalf("marks after the open: %v", got)
	}
	journal := readRecord(t, st, format.JournalKey)

	storefixture.WriteEntryList(t, st, true, a, f)
	storefixture.Retire(t, st, first)
	d2 := storefixture.Delta(st, func() {
		if err := reader.Refresh(ctx); err != nil {
			t.Fatal(err)
		}
	})
	if d2 != (store.Counts{List: 1, Get: 3}) {
		t.Fatalf("refresh sent %v, want 1 LIST + 2 conditional GETs + the new list", d2)
	}
	if got := readRecord(t, st, format.JournalKey); string(got) != string(journal) {
		t.Fatal("the journal changed")
	}
	sameAsAFreshOpen(t, reader, st)
	if got := entrySources(t, reader); len(got) != 6 || got[b.Key()] != sourceJournal || got[f.Key()] == sourceJournal {
		t.Fatalf("after the refresh: %v", got)
	}

	// The marks carried the signatures' counts: a cached signature whose
	// lines did not change stays cached; one a writer replaced again goes.
	for _, s := range []format.Entry{b, e} {
		if _, err := reader.ReadSig(ctx, s); err != nil {
			t.Fatal(err)
		}
	}
	if err := st.Put(ctx, e.Key(), []byte("v3")); err != nil {
		t.Fatal(err)
	}
	storefixture.WriteJournalText(t, st, string(journal)+string(format.Journal([]format.JournalLine{{Key: e.Key()}})))
	if err := reader.Refresh(ctx); err != nil {
		t.Fatal(err)
	}
	sameAsAFreshOpen(t, reader, st)
	d2 = storefixture.Delta(st, func() {
		if got, err := reader.ReadSig(ctx, b); err != nil || string(got) != string(storefixture.SigBytes(b.Key())) {
			t.Fatalf("read of b: %q %v", got, err)
		}
		if got, err := reader.ReadSig(ctx, e); err != nil || string(got) != "v3" {
			t.Fatalf("read of the replaced signature: %q %v", got, err)
		}
	})
	if d2 != (store.Counts{Get: 1}) {
		t.Fatalf("reads after the refresh sent %v, want 1 GET (the replaced signature only)", d2)
	}
}

// TestRefreshFromPrefixModeWithAnUnchangedJournal: a store that was not
// folded gets its first complete list (a fold that had nothing to mark) while
// its journal stays the same bytes: the reader, in the prefix mode, kept the
// journal's entries in a set of their own, and the folded view it moves to
// must hold them.
func TestRefreshFromPrefixModeWithAnUnchangedJournal(t *testing.T) {
	ctx := context.Background()
	st := storefixture.NewMem(t)
	a := storefixture.Ent(format.KindSig, objA, "alice")
	b := storefixture.Ent(format.KindSeal, objC, "s1")
	storefixture.PutEntries(t, st, a, b)
	storefixture.WriteJournal(t, st, 5, a, b)
	reader, _ := openIndex(t, st)
	if err := reader.Load(ctx); err != nil {
		t.Fatal(err)
	}
	if s := reader.Status(); s.Mode != ModePrefixListing {
		t.Fatalf("mode %s", s.Mode)
	}
	storefixture.WriteEntryList(t, st, true, a)
	if err := reader.Refresh(ctx); err != nil {
		t.Fatal(err)
	}
	if s := reader.Status(); s.Mode != ModeFolded {
		t.Fatalf("mode %s", s.Mode)
	}
	sameAsAFreshOpen(t, reader, st)
	if got := entrySources(t, reader); len(got) != 2 || got[b.Key()] != sourceJournal {
		t.Fatalf("after the refresh: %v", got)
	}
}

// TestAFoldedLineWhoseKeyIsInAListCostsOneBit: right after a complete fold
// the journal still holds every folded line (an hour). The view keeps no
// line: a folded line whose key the list holds costs one bit of the marks,
// so the index holds exactly the clean store's set plus one bit per entry
// (rounded up to 64 per kind), and the heap it keeps is the clean store's
// within that.
func TestAFoldedLineWhoseKeyIsInAListCostsOneBit(t *testing.T) {
	ctx := context.Background()
	const n = 20000
	var keys []string
	clean := storefixture.NewMem(t)
	if _, err := storegen.Generate(ctx, clean, storegen.Options{Entries: n, Seed: 3, Fold: true, SkipObjects: true,
		OnEntry: func(e format.Entry, _ string) { keys = append(keys, e.Key()) }}); err != nil {
		t.Fatal(err)
	}
	folded := storefixture.NewMem(t)
	sn, err := clean.ReadSnapshot(ctx)
	if err != nil || len(sn.Lists) != 1 {
		t.Fatalf("%v %v", sn, err)
	}
	data, err := clean.Get(ctx, sn.Lists[0].Name)
	if err != nil {
		t.Fatal(err)
	}
	if err := folded.Put(ctx, sn.Lists[0].Name, data); err != nil {
		t.Fatal(err)
	}
	lines := make([]format.JournalLine, len(keys))
	for i, k := range keys {
		lines[i] = format.JournalLine{FoldedAt: time.Now().UnixMilli(), Key: k}
	}
	storefixture.WriteJournalText(t, folded, string(format.Journal(lines)))

	kept := func(st *store.Store) (*Index, int64) {
		var m0, m1 runtime.MemStats
		runtime.GC()
		runtime.GC()
		runtime.ReadMemStats(&m0)
		ix, _ := openIndex(t, st)
		if err := ix.Load(ctx); err != nil {
			t.Fatal(err)
		}
		runtime.GC()
		runtime.GC()
		runtime.ReadMemStats(&m1)
		return ix, int64(m1.HeapAlloc) - int64(m0.HeapAlloc)
	}
	ci, cleanHeap := kept(clean)
	fi, foldedHeap := kept(folded)
	cs, fs := ci.Status(), fi.Status()
	if fs.JournalLines != n || fs.JournalFolded != n || fs.Entries != n || cs.Entries != n {
		t.Fatalf("clean %+v, after the fold %+v", cs, fs)
	}
	var bits int64
	v := fi.v.Load()
	for k := range format.NumKinds {
		bits += 8 * int64((v.base.kinds[k].nEntries()+63)/64)
	}
	if fs.MemoryBytes != cs.MemoryBytes+bits {
		t.Fatalf("after the fold the index holds %d bytes, the clean store's %d + %d of marks", fs.MemoryBytes, cs.MemoryBytes, bits)
	}
	if v.rec.Journal != nil || len(v.journal.exIdx) != 0 || v.journal.own {
		t.Fatalf("the view keeps journal lines: %d lines in its records, %d counted signatures", len(v.rec.Journal), len(v.journal.exIdx))
	}
	// The heap, which sees anything a view keeps: the lines and a map of
	// their keys cost ~160 B each; the marks cost 1/8 B, GC noise a few
	// hundred KB at most.
	if extra := foldedHeap - cleanHeap; extra > n*8 {
		t.Fatalf("after the fold the index keeps %d B of heap, %d B more than the clean store's (%.1f B per folded line)",
			foldedHeap, extra, float64(extra)/n)
	}
	runtime.KeepAlive(ci)
	runtime.KeepAlive(fi)
}
