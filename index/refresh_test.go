package index

import (
	"context"
	"errors"
	"io/fs"
	"slices"
	"testing"
	"time"

	"github.com/oxyfs/oxyfs/fold"
	"github.com/oxyfs/oxyfs/store"
	"github.com/oxyfs/oxyfs/store/format"
	"github.com/oxyfs/oxyfs/store/journal"
	"github.com/oxyfs/oxyfs/testkit/storefixture"
)

// refreshFixture is a folded mem store on a simulated clock, a reader
// whose handle counts only the reader's requests, and a writer (own
// handle, own index) sharing the bucket.
type refreshFixture struct {
	clk    *store.FakeClock
	rst    *store.Store // the reader's handle
	wst    *store.Store // everyone else's
	reader *Index
	writer *Index
	want   []format.Entry // what the store holds
}

func newRefreshFixture(t *testing.T) *refreshFixture {
	t.Helper()
	ctx := context.Background()
	clk := store.NewFakeClock(1_700_000_000_000)
	base := storefixture.Open(t, "mem://", store.Options{Layout: store.LayoutBucket, Clock: clk})
	f := &refreshFixture{clk: clk, wst: base}
	f.rst = store.New(base.Bucket(), "mem", "", store.Options{Layout: store.LayoutBucket, Clock: clk})
	f.want = []format.Entry{storefixture.Ent(format.KindSig, objA, "alice"), storefixture.Ent(format.KindSeal, objC, "s1")}
	storefixture.PutEntries(t, base, f.want...)
	f.complete(t)
	f.reader, _ = openIndex(t, f.rst)
	f.writer, _ = openIndex(t, base)
	if err := f.reader.Load(ctx); err != nil {
		t.Fatal(err)
	}
	if s := f.reader.Status(); s.Mode != ModeFolded || len(s.LiveLists) != 1 {
		t.Fatalf("fixture: %+v", s)
	}
	return f
}

func (f *refreshFixture) complete(t *testing.T) fold.Report {
	t.Helper()
	rep, err := fold.Complete(context.Background(), f.wst, fold.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return rep
}

// put writes entries as a journaling writer does.
func (f *refreshFixture) put(t *testing.T, es ...format.Entry) {
	t.Helper()
	for _, e := range es {
		var data []byte
		if e.Kind == format.KindSig {
			data = storefixture.SigBytes(e.Key())
		}
		if err := f.writer.Put(context.Background(), e, data); err != nil {
			t.Fatal(err)
		}
	}
	f.want = append(f.want, es...)
}

// refresh refreshes the reader and checks exactly what it sent and that it
// then shows exactly the store's entries.
func (f *refreshFixture) refresh(t *testing.T, want store.Counts) {
	t.Helper()
	d := storefixture.Delta(f.rst, func() {
		if err := f.reader.Refresh(context.Background()); err != nil {
			t.Fatal(err)
		}
	})
	if d != want {
		t.Fatalf("refresh sent %v, want %v", d, want)
	}
	if s := f.reader.Status(); s.LastRefresh != want {
		t.Fatalf("Status.LastRefresh %v, want %v", s.LastRefresh, want)
	}
	if got := walkEntries(t, f.reader); !slices.Equal(got, keysOf(f.want)) {
		t.Fatalf("after refresh the tree holds\n%v\nwant\n%v", got, keysOf(f.want))
	}
}

var (
	unchanged    = store.Counts{Get: 2}          // the two conditional GETs
	listed       = store.Counts{List: 1, Get: 2} // a record changed, no list to read
	listedAndOne = store.Counts{List: 1, Get: 3} // a record changed, one new list
	forgotten    = store.Counts{List: 1, Get: 4} // a collection forgot: its two forget records (forgotten.go)
)

func TestRefreshOfAnUnchangedFoldedStoreSendsNoList(t *testing.T) {
	f := newRefreshFixture(t)
	g := f.reader.Generation()
	f.refresh(t, unchanged)
	if f.reader.Generation() != g {
		t.Fatal("an unchanged refresh bumped the generation")
	}
	// A quiet mount with --refresh-interval 10s: 360 refreshes an hour.
	d := storefixture.Delta(f.rst, func() {
		for range 360 {
			if err := f.reader.Refresh(context.Background()); err != nil {
				t.Fatal(err)
			}
		}
	})
	if d != (store.Counts{Get: 720}) {
		t.Fatalf("an hour of refreshes every 10s sent %v, want 720 GETs and no LIST", d)
	}
	if s := f.reader.Status(); s.Refreshes != 361 || s.Mode != ModeFolded {
		t.Fatalf("status: %d refreshes, mode %s", s.Refreshes, s.Mode)
	}
}

func TestRefreshAfterAWriterAppendedListsButReadsNoList(t *testing.T) {
	f := newRefreshFixture(t)
	g := f.reader.Generation()
	f.put(t, storefixture.Ent(format.KindSig, objB, "bob"), storefixture.Ent(format.KindReceipt, objD, "runner-1"))
	f.refresh(t, listed)
	if f.reader.Generation() == g {
		t.Fatal("a refresh that showed new entries kept the generation")
	}
	f.refresh(t, unchanged)
}

func TestRefreshAfterAPartialFoldReadsOnlyThePartialList(t *testing.T) {
	f := newRefreshFixture(t)
	f.put(t, storefixture.Ent(format.KindSig, objB, "bob"), storefixture.Ent(format.KindSeal, objD, "s2"))
	f.refresh(t, listed)
	res, err := journal.Partial(context.Background(), f.wst)
	if err != nil || res.Marked != 2 {
		t.Fatalf("partial fold: %+v %v", res, err)
	}
	f.refresh(t, listedAndOne)
	s := f.reader.Status()
	if len(s.LiveLists) != 2 || s.JournalFolded != 2 {
		t.Fatalf("after a partial fold: %d live lists, %d folded lines", len(s.LiveLists), s.JournalFolded)
	}
	n, err := f.reader.Stat(context.Background(), objectPath(format.KindSeal, objD)+"/s2")
	if err != nil || n.Source != "list "+res.List {
		t.Fatalf("the partial list's entry: %+v %v", n, err)
	}
	f.refresh(t, unchanged)
}

func TestRefreshAfterACompleteFoldReadsOnlyTheNewList(t *testing.T) {
	f := newRefreshFixture(t)
	f.put(t, storefixture.Ent(format.KindSig, objB, "bob"))
	older := storefixture.Ent(format.KindCert, objD, "k1") // an older writer: key only, no line
	storefixture.PutEntries(t, f.wst, older)
	f.want = append(f.want, older)
	rep := f.complete(t)
	if !rep.List.Written || len(rep.Retired) != 1 || rep.Marked != 1 {
		t.Fatalf("fold: %+v", rep)
	}
	f.refresh(t, listedAndOne)
	if s := f.reader.Status(); len(s.LiveLists) != 1 || s.LiveLists[0].Name != rep.List.Name || len(s.RetiredLists) != 1 {
		t.Fatalf("after a complete fold: live %v retired %v", s.LiveLists, s.RetiredLists)
	}
	f.refresh(t, unchanged)
	// A fold that finds nothing new writes, retires and marks nothing.
	if rep := f.complete(t); rep.List.Written || len(rep.Retired) != 0 || rep.Marked != 0 {
		t.Fatalf("idle fold: %+v", rep)
	}
	f.refresh(t, unchanged)
}

func TestRefreshAfterACollection(t *testing.T) {
	ctx := context.Background()
	f := newRefreshFixture(t)
	f.put(t, storefixture.Ent(format.KindSig, objB, "bob"))
	f.complete(t) // retires the fixture's list
	f.refresh(t, listedAndOne)
	f.clk.Advance(format.GracePeriod + time.Minute)

	// Nothing new: the collection deletes the retired list and drops its
	// line, and the fold after it writes nothing. The live names are the
	// same, so no list is read.
	rep, err := fold.Collect(ctx, f.wst, fold.CollectOptions{})
	if err != nil || len(rep.Deleted) != 1 || rep.RetiredLinesDropped != 1 || rep.Fold.List.Written {
		t.Fatalf("collection: %+v %v", rep, err)
	}
	f.refresh(t, listed)
	if s := f.reader.Status(); len(s.RetiredLists) != 0 {
		t.Fatalf("retired lists after the collection: %v", s.RetiredLists)
	}
	f.refresh(t, unchanged)

	// An older writer's entry: the collection's fold writes a new list and
	// retires the old one, which is all the reader reads.
	older := storefixture.Ent(format.KindApproval, objD, "carol")
	storefixture.PutEntries(t, f.wst, older)
	f.want = append(f.want, older)
	rep, err = fold.Collect(ctx, f.wst, fold.CollectOptions{})
	if err != nil || !rep.Fold.List.Written || len(rep.Fold.Retired) != 1 {
		t.Fatalf("collection: %+v %v", rep, err)
	}
	f.refresh(t, listedAndOne)
	f.refresh(t, unchanged)
}

func TestRefreshOfAStoreThatStopsBeingFoldedListsPrefixes(t *testing.T) {
	ctx := context.Background()
	f := newRefreshFixture(t)
	live := f.reader.Status().LiveLists[0].Name
	// Another implementation's collection retires the only complete list.
	if _, err := f.wst.UpdateRecord(ctx, format.RetiredKey, func(old []byte, _ bool) ([]byte, error) {
		return append(old, format.Retired([]format.RetiredLine{{RetiredAt: f.clk.NowMs(), Key: live}})...), nil
	}); err != nil {
		t.Fatal(err)
	}
	older := storefixture.Ent(format.KindSig, objD, "dave") // seen only by listing prefixes now
	storefixture.PutEntries(t, f.wst, older)
	f.want = append(f.want, older)
	f.refresh(t, listed)
	if s := f.reader.Status(); s.Mode != ModePrefixListing || s.Folded {
		t.Fatalf("mode %s, folded %v", s.Mode, s.Folded)
	}
	// Not folded: every refresh lists the pack prefix, unchanged or not.
	f.refresh(t, listed)
	if s := f.reader.Status(); s.Mode != ModePrefixListing {
		t.Fatalf("mode %s", s.Mode)
	}
}

// TestRefreshOfAnUnfoldedStoreSeesItsFirstFold: a first fold with no
// journal line to mark and no list to retire changes neither record; a
// reader that is not folded lists anyway, so it finds the list.
func TestRefreshOfAnUnfoldedStoreSeesItsFirstFold(t *testing.T) {
	ctx := context.Background()
	st := storefixture.NewMem(t)
	a := storefixture.Ent(format.KindSig, objA, "alice") // older writer: key only
	storefixture.PutEntries(t, st, a)
	ix, _ := openIndex(t, st)
	if err := ix.Load(ctx); err != nil {
		t.Fatal(err)
	}
	if s := ix.Status(); s.Mode != ModePrefixListing {
		t.Fatalf("mode %s", s.Mode)
	}
	rep, err := fold.Complete(ctx, otherHandle(st), fold.Options{})
	if err != nil || !rep.List.Written || len(rep.Retired) != 0 || rep.Marked != 0 {
		t.Fatalf("first fold: %+v %v", rep, err)
	}
	if d := storefixture.Delta(st, func() { ix.Refresh(ctx) }); d != (store.Counts{List: 1, Get: 3}) {
		t.Fatalf("refresh sent %v", d)
	}
	if s := ix.Status(); s.Mode != ModeFolded {
		t.Fatalf("mode %s after the first fold", s.Mode)
	}
	if d := storefixture.Delta(st, func() {
		if got := walkEntries(t, ix); !slices.Equal(got, []string{a.Key()}) {
			t.Fatalf("tree %v", got)
		}
	}); d.Total() != 0 {
		t.Fatalf("browsing the folded store sent %v", d)
	}
}

// TestRefreshMissesASecondFirstFoldUntilARecordChanges pins down the one
// case refreshSnapshot documents: two first folds run at once, the reader
// opens between their list writes, and neither fold changes a record. The
// second list (which holds an older writer's entry) is seen once either
// record changes; no journaled entry is ever missed.
func TestRefreshMissesASecondFirstFoldUntilARecordChanges(t *testing.T) {
	ctx := context.Background()
	st := storefixture.NewMem(t)
	a := storefixture.Ent(format.KindSig, objA, "alice")
	older := storefixture.Ent(format.KindSig, objB, "older-writer")
	storefixture.PutEntries(t, st, a, older)
	storefixture.WriteEntryList(t, st, true, a) // the first fold's list: its listing missed older
	ix, _ := openIndex(t, st)
	if err := ix.Load(ctx); err != nil {
		t.Fatal(err)
	}
	storefixture.WriteEntryList(t, st, true, a, older) // the second fold's, after the reader's snapshot
	if d := storefixture.Delta(st, func() { ix.Refresh(ctx) }); d != (store.Counts{Get: 2}) {
		t.Fatalf("refresh sent %v", d)
	}
	if _, err := ix.Stat(ctx, older.Key()); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("Stat of the older writer's entry: %v (the lag this test pins down is gone: update the docs)", err)
	}
	w, _ := openIndex(t, otherHandle(st))
	b := storefixture.Ent(format.KindSig, objC, "bob")
	if err := w.Put(ctx, b, []byte("b")); err != nil {
		t.Fatal(err)
	}
	// A complete list prev did not hold: the set is built afresh (both lists).
	if d := storefixture.Delta(st, func() { ix.Refresh(ctx) }); d != (store.Counts{List: 1, Get: 4}) {
		t.Fatalf("refresh sent %v", d)
	}
	if got := walkEntries(t, ix); !slices.Equal(got, keysOf([]format.Entry{a, older, b})) {
		t.Fatalf("tree %v", got)
	}
}

// TestRefreshDropsAnEntryWhoseOnlyJournalLineLeft: a collection forgets an
// object only the journal named (the list is the same before and after), so
// the live names stay and only the journal changes. The refresh must show
// exactly the store: the forgotten entry goes, it does not linger because a
// refresh merged only the journal's new lines.
func TestRefreshDropsAnEntryWhoseOnlyJournalLineLeft(t *testing.T) {
	ctx := context.Background()
	f := newRefreshFixture(t)
	x := storefixture.Ent(format.KindSig, objB, "bob")
	f.put(t, x)
	f.refresh(t, listed)
	g := f.reader.Generation()
	rep, err := fold.Collect(ctx, f.wst, fold.CollectOptions{
		ForgetObjects: []fold.ForgetObject{{Object: objB}}, Apply: true,
	})
	if err != nil || rep.Forget.Lines != 1 || rep.Forget.Deleted != 1 {
		t.Fatalf("collection: %+v %v", rep.Forget, err)
	}
	if !rep.Fold.List.Unchanged || len(rep.Fold.Retired) != 0 {
		t.Fatalf("the fold after the collection: %+v (want the live list unchanged)", rep.Fold.List)
	}
	f.want = slices.DeleteFunc(f.want, func(e format.Entry) bool { return e == x })
	f.refresh(t, forgotten)
	if f.reader.Generation() == g {
		t.Fatal("a refresh that dropped an entry kept the generation")
	}
	if _, err := f.reader.Stat(ctx, x.Key()); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("Stat of the forgotten entry: %v", err)
	}
	f.refresh(t, unchanged)
}

// TestRefreshListsWhenItsLastLookIsOverTheTrustWindow: the journal and the
// retired record return to the very bytes a reader last saw (a fold retired
// the list and a collection an hour later deleted it and dropped its line)
// while the live lists changed. A conditional GET says "not modified"
// (content-addressed versions), so a reader that last looked more than
// trustWindow ago must list the pack prefix; one that looked within it may
// trust the records (every change to them lasts an hour).
func TestRefreshListsWhenItsLastLookIsOverTheTrustWindow(t *testing.T) {
	ctx := context.Background()
	f := newRefreshFixture(t)
	old := f.reader.Status().LiveLists[0].Name
	journalBefore := readRecord(t, f.wst, format.JournalKey)

	// An older writer's entry; a fold by hand lists it into a new list and
	// retires the old one (no journal line to mark).
	older := storefixture.Ent(format.KindSig, objD, "dave")
	storefixture.PutEntries(t, f.wst, older)
	f.want = append(f.want, older)
	rep := f.complete(t)
	if !rep.List.Written || len(rep.Retired) != 1 || rep.Retired[0] != old {
		t.Fatalf("fold: %+v", rep)
	}
	// Within the window the reader looks and sees the change.
	f.clk.Advance(trustWindow - time.Minute)
	f.refresh(t, listedAndOne)

	// A second change that reverts both records: write a list by hand,
	// retire the reader's list, then, an hour later, delete it and put the
	// retired record back to the bytes the reader saw.
	newer := storefixture.Ent(format.KindSeal, objD, "s7")
	storefixture.PutEntries(t, f.wst, newer)
	f.want = append(f.want, newer)
	afterFirst := readRecord(t, f.wst, format.RetiredKey)
	rep = f.complete(t)
	if !rep.List.Written || len(rep.Retired) != 1 {
		t.Fatalf("second fold: %+v", rep)
	}
	f.clk.Advance(format.GracePeriod + time.Minute)
	if err := f.wst.Delete(ctx, rep.Retired[0]); err != nil {
		t.Fatal(err)
	}
	writeRecordBytes(t, f.wst, format.RetiredKey, afterFirst)
	if got := readRecord(t, f.wst, format.JournalKey); string(got) != string(journalBefore) {
		t.Fatalf("journal changed: %q", got)
	}
	// The reader last looked over the window ago: it lists, and sees the
	// list that replaced the one it held.
	f.refresh(t, listedAndOne)
	// Now it looked just now: a quiet refresh trusts the records again.
	f.refresh(t, unchanged)
	f.clk.Advance(trustWindow - time.Second)
	f.refresh(t, unchanged)
	// A refresh after a quiet window lists once (nothing new to read), then
	// trusts again.
	f.clk.Advance(trustWindow)
	f.refresh(t, listed)
	f.refresh(t, unchanged)
}

func readRecord(t testing.TB, st *store.Store, key string) []byte {
	t.Helper()
	data, _, err := st.ReadRecord(context.Background(), key)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

func writeRecordBytes(t testing.TB, st *store.Store, key string, data []byte) {
	t.Helper()
	if _, err := st.UpdateRecord(context.Background(), key, func([]byte, bool) ([]byte, error) {
		return data, nil
	}); err != nil {
		t.Fatal(err)
	}
}

// TestRefreshDropsAnOwnWriteACollectionForgot: a handle writes an entry
// (shown at once, as its own write), then a collection forgets the object.
// After a refresh the handle shows exactly the store: its own write went
// with the object, it does not linger in the handle's overlay.
func TestRefreshDropsAnOwnWriteACollectionForgot(t *testing.T) {
	ctx := context.Background()
	f := newRefreshFixture(t)
	mine := storefixture.Ent(format.KindSeal, objD, "s5")
	if err := f.reader.Put(ctx, mine, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := f.reader.Stat(ctx, mine.Key()); err != nil {
		t.Fatalf("own write not shown at once: %v", err)
	}
	rep, err := fold.Collect(ctx, f.wst, fold.CollectOptions{
		ForgetObjects: []fold.ForgetObject{{Object: objD}}, Apply: true,
	})
	if err != nil || rep.Forget.Deleted != 1 {
		t.Fatalf("collection: %+v %v", rep.Forget, err)
	}
	// The reader's handle sent the PUTs of its write: count only the refresh.
	if err := f.reader.Refresh(ctx); err != nil {
		t.Fatal(err)
	}
	if got := walkEntries(t, f.reader); !slices.Equal(got, keysOf(f.want)) {
		t.Fatalf("after refresh the tree holds\n%v\nwant\n%v", got, keysOf(f.want))
	}
	if _, err := f.reader.Stat(ctx, mine.Key()); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("Stat of the forgotten own write: %v", err)
	}
}
