package index

import (
	"context"
	"errors"
	"io/fs"
	"testing"

	"github.com/oxyfs/oxyfs/store"
	"github.com/oxyfs/oxyfs/store/format"
	"github.com/oxyfs/oxyfs/testkit/storefixture"
)

// textOf is the text of a list as format.EntryListText serves it.
func listTextOf(t *testing.T, st *store.Store, name string) int64 {
	t.Helper()
	data, err := st.Get(context.Background(), name)
	if err != nil {
		t.Fatal(err)
	}
	n, err := format.EntryListTextSize(data)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// TestRecordsAreTheViewsText: JournalText and RetiredText return the journal and the retired
// record as the view read them, byte for byte (a bad line included), with
// no request; a refresh that finds them changed shows the new text, one
// that finds them unchanged keeps it.
func TestRecordsAreTheViewsText(t *testing.T) {
	ctx := context.Background()
	st := storefixture.NewMem(t)
	a, b := storefixture.Ent(format.KindSig, "ab12", "alice"), storefixture.Ent(format.KindSeal, "cd34", "change-1")
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
		if j, err = ix.JournalText(ctx); err != nil {
			t.Fatal(err)
		}
		if r, err = ix.RetiredText(ctx); err != nil {
			t.Fatal(err)
		}
	}); d.Total() != 0 {
		t.Errorf("JournalText and RetiredText sent %v", d)
	}
	if j != journal || r != string(format.Retired([]format.RetiredLine{{RetiredAt: 1, Key: "pack-gone"}})) {
		t.Errorf("JournalText, RetiredText = %q, %q", j, r)
	}
	if err := ix.Refresh(ctx); err != nil {
		t.Fatal(err)
	}
	if j, _ := ix.JournalText(ctx); j != journal {
		t.Errorf("after a refresh that changed nothing: %q", j)
	}
	storefixture.WriteJournalText(t, st, journal+"0 "+a.Key()+"\n")
	if j, _ := ix.JournalText(ctx); j != journal {
		t.Errorf("before the refresh: %q, want the view's", j)
	}
	if err := ix.Refresh(ctx); err != nil {
		t.Fatal(err)
	}
	if j, _ := ix.JournalText(ctx); j != journal+"0 "+a.Key()+"\n" {
		t.Errorf("after a refresh that found the journal changed: %q", j)
	}
	if n, ok := ix.ListTextKnown(list); !ok || n != listTextOf(t, st, list) {
		t.Errorf("ListTextKnown(%s) = %d, %v after a folded open; want %d", list, n, ok, listTextOf(t, st, list))
	}
}

// TestRecordsOfALongJournalAreReadAgain: the view does not keep a journal
// longer than Options.KeepJournalText; JournalText reads it (one GET) and
// shows the store's journal as it is now, before and after a refresh that
// finds it unchanged; the retired record never costs a request; a view
// whose journal is short again keeps it once more.
func TestRecordsOfALongJournalAreReadAgain(t *testing.T) {
	ctx := context.Background()
	st := storefixture.NewMem(t)
	a, b := storefixture.Ent(format.KindSig, "ab12", "alice"), storefixture.Ent(format.KindSeal, "cd34", "change-1")
	storefixture.PutEntries(t, st, a, b)
	storefixture.WriteEntryList(t, st, true, a)
	short := "0 " + b.Key() + "\n"
	long := short + "0 " + a.Key() + "\n"
	storefixture.WriteJournalText(t, st, short)
	ix, err := Open(ctx, st, Options{Warn: func(string) {}, KeepJournalText: len(short)})
	if err != nil {
		t.Fatal(err)
	}
	defer ix.Close()
	if err := ix.Load(ctx); err != nil {
		t.Fatal(err)
	}
	check := func(step, want string, gets int64) {
		t.Helper()
		var j string
		d := storefixture.Delta(st, func() {
			var err error
			if j, err = ix.JournalText(ctx); err != nil {
				t.Fatal(err)
			}
		})
		if d.Get != gets || d.Total() != gets {
			t.Errorf("%s: JournalText sent %v, want %d GET", step, d, gets)
		}
		if j != want {
			t.Errorf("%s: JournalText = %q, want %q", step, j, want)
		}
		if kept := ix.JournalTextKept(); kept != (gets == 0) {
			t.Errorf("%s: JournalTextKept = %v", step, kept)
		}
		if d := storefixture.Delta(st, func() { ix.RetiredText(ctx) }); d.Total() != 0 {
			t.Errorf("%s: RetiredText sent %v", step, d)
		}
	}
	check("a short journal", short, 0)
	storefixture.WriteJournalText(t, st, long)
	check("before the refresh: the view's", short, 0)
	if err := ix.Refresh(ctx); err != nil {
		t.Fatal(err)
	}
	check("a long journal", long, 1)
	if err := ix.Refresh(ctx); err != nil {
		t.Fatal(err)
	}
	check("a long journal, after a refresh that changed nothing", long, 1)
	longer := long + "0 " + b.Key() + "\n"
	storefixture.WriteJournalText(t, st, longer)
	check("a long journal changed since the view: the store's", longer, 1)
	storefixture.WriteJournalText(t, st, short)
	if err := ix.Refresh(ctx); err != nil {
		t.Fatal(err)
	}
	check("a short journal again", short, 0)
}

// TestListTextSizeOfAnUnreadListIsOneGetOnce: in the prefix modes the index
// reads no list; the first ListTextSize of a live one reads it (one GET),
// later ones and ReadList's size are answered from memory until a refresh
// drops the list; a name that is not a live list does not exist.
func TestListTextSizeOfAnUnreadListIsOneGetOnce(t *testing.T) {
	ctx := context.Background()
	st := storefixture.NewMem(t)
	a := storefixture.Ent(format.KindSig, "ab12", "alice")
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
	for _, name := range []string{"pack-nope.entries", format.EntryListName("00"+partial[7:69], true)} {
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
