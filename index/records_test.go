package index

import (
	"context"
	"errors"
	"io/fs"
	"testing"

	"github.com/oxyfs/oxyfs/internal/storefixture"
	"github.com/oxyfs/oxyfs/store"
)

// textOf is the text of a list as store.EntryListText serves it.
func listTextOf(t *testing.T, st *store.Store, name string) int64 {
	t.Helper()
	data, err := st.Get(context.Background(), name)
	if err != nil {
		t.Fatal(err)
	}
	n, err := store.EntryListTextSize(data)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// TestRecordsAreTheViewsText: Records returns the journal and the retired
// record as the view read them, byte for byte (a bad line included), with
// no request; a refresh that finds them changed shows the new text, one
// that finds them unchanged keeps it.
func TestRecordsAreTheViewsText(t *testing.T) {
	ctx := context.Background()
	st := storefixture.NewMem(t)
	a, b := storefixture.Ent(store.KindSig, "ab12", "alice"), storefixture.Ent(store.KindSeal, "cd34", "change-1")
	storefixture.PutEntries(t, st, a, b)
	list := storefixture.WriteEntryList(t, st, true, a)
	journal := "0 " + b.Key() + "\nnot a line\n"
	storefixture.WriteJournalText(t, st, journal)
	storefixture.Retire(t, st, "pack-gone")
	ix, _ := openIndex(t, st)
	if err := ix.Load(ctx); err != nil {
		t.Fatal(err)
	}
	var j, r string
	if d := storefixture.Delta(st, func() {
		var err error
		if j, r, err = ix.Records(ctx); err != nil {
			t.Fatal(err)
		}
	}); d.Total() != 0 {
		t.Errorf("Records sent %v", d)
	}
	if j != journal || r != string(store.FormatRetired([]store.RetiredLine{{RetiredAt: 1, Key: "pack-gone"}})) {
		t.Errorf("Records = %q, %q", j, r)
	}
	if err := ix.Refresh(ctx); err != nil {
		t.Fatal(err)
	}
	if j, _, _ := ix.Records(ctx); j != journal {
		t.Errorf("after a refresh that changed nothing: %q", j)
	}
	storefixture.WriteJournalText(t, st, journal+"0 "+a.Key()+"\n")
	if j, _, _ := ix.Records(ctx); j != journal {
		t.Errorf("before the refresh: %q, want the view's", j)
	}
	if err := ix.Refresh(ctx); err != nil {
		t.Fatal(err)
	}
	if j, _, _ := ix.Records(ctx); j != journal+"0 "+a.Key()+"\n" {
		t.Errorf("after a refresh that found the journal changed: %q", j)
	}
	if n, ok := ix.ListTextKnown(list); !ok || n != listTextOf(t, st, list) {
		t.Errorf("ListTextKnown(%s) = %d, %v after a folded open; want %d", list, n, ok, listTextOf(t, st, list))
	}
}

// TestRecordsOfALongJournalAreReadAgain: the view does not keep a journal
// longer than maxKeptJournalText; Records reads it (one GET) and shows the
// store's journal as it is now, before and after a refresh that finds it
// unchanged, and a view whose journal is short again keeps it once more.
func TestRecordsOfALongJournalAreReadAgain(t *testing.T) {
	ctx := context.Background()
	defer func(n int) { maxKeptJournalText = n }(maxKeptJournalText)
	st := storefixture.NewMem(t)
	a, b := storefixture.Ent(store.KindSig, "ab12", "alice"), storefixture.Ent(store.KindSeal, "cd34", "change-1")
	storefixture.PutEntries(t, st, a, b)
	storefixture.WriteEntryList(t, st, true, a)
	journal := "0 " + b.Key() + "\n"
	maxKeptJournalText = len(journal) - 1
	storefixture.WriteJournalText(t, st, journal)
	ix, _ := openIndex(t, st)
	if err := ix.Load(ctx); err != nil {
		t.Fatal(err)
	}
	for _, step := range []string{"after the open", "after a refresh that changed nothing"} {
		var j string
		if d := storefixture.Delta(st, func() {
			var err error
			if j, _, err = ix.Records(ctx); err != nil {
				t.Fatal(err)
			}
		}); d.Get != 1 || d.Total() != 1 {
			t.Errorf("%s: Records sent %v, want 1 GET", step, d)
		}
		if j != journal {
			t.Errorf("%s: Records = %q, want %q", step, j, journal)
		}
		if err := ix.Refresh(ctx); err != nil {
			t.Fatal(err)
		}
	}
	maxKeptJournalText = 1 << 20
	longer := journal + "0 " + a.Key() + "\n"
	storefixture.WriteJournalText(t, st, longer)
	if j, _, _ := ix.Records(ctx); j != longer {
		t.Errorf("a journal the view does not keep is the store's: %q, want %q", j, longer)
	}
	if err := ix.Refresh(ctx); err != nil {
		t.Fatal(err)
	}
	var j string
	if d := storefixture.Delta(st, func() { j, _, _ = ix.Records(ctx) }); d.Total() != 0 || j != longer {
		t.Errorf("a short journal again: Records = %q sending %v, want %q and nothing", j, d, longer)
	}
}

// TestListTextSizeOfAnUnreadListIsOneGetOnce: in the prefix modes the index
// reads no list; the first ListTextSize of a live one reads it (one GET),
// later ones and ReadList's size are answered from memory until a refresh
// drops the list; a name that is not a live list does not exist.
func TestListTextSizeOfAnUnreadListIsOneGetOnce(t *testing.T) {
	ctx := context.Background()
	st := storefixture.NewMem(t)
	a := storefixture.Ent(store.KindSig, "ab12", "alice")
	storefixture.PutEntries(t, st, a)
	partial := storefixture.WriteEntryList(t, st, false, a)
	ix, _ := openIndex(t, st)
	if err := ix.Load(ctx); err != nil {
		t.Fatal(err)
	}
	if ix.Status().Folded {
		t.Fatal("a store with a partial list alone is folded")
	}
	if _, ok := ix.ListTextKnown(partial); ok {
		t.Error("the size of a list nobody read is known")
	}
	want := listTextOf(t, st, partial)
	var n int64
	if d := storefixture.Delta(st, func() {
		var err error
		if n, err = ix.ListTextSize(ctx, partial); err != nil {
			t.Fatal(err)
		}
	}); n != want || d.Get != 1 || d.Total() != 1 {
		t.Errorf("ListTextSize = %d, sent %v; want %d, 1 GET", n, d, want)
	}
	if d := storefixture.Delta(st, func() { n, _ = ix.ListTextSize(ctx, partial) }); n != want || d.Total() != 0 {
		t.Errorf("again: %d, sent %v", n, d)
	}
	if data, size, err := ix.ReadList(ctx, partial); err != nil || size != want || len(data) == 0 {
		t.Errorf("ReadList: %d bytes, size %d, %v", len(data), size, err)
	}
	for _, name := range []string{"pack-nope.entries", store.EntryListName("00"+partial[7:69], true)} {
		if _, err := ix.ListTextSize(ctx, name); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("ListTextSize(%s) = %v, want ErrNotExist", name, err)
		}
	}
	storefixture.Retire(t, st, partial)
	if err := ix.Refresh(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := ix.ListTextSize(ctx, partial); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("ListTextSize of a retired list = %v, want ErrNotExist", err)
	}
	ix.lists.mu.Lock()
	held := len(ix.lists.n)
	ix.lists.mu.Unlock()
	if held != 0 {
		t.Errorf("%d list sizes kept after the only list was retired", held)
	}
}
