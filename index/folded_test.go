package index

import (
	"context"
	"errors"
	"io/fs"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/klauspost/compress/zstd"

	"gocloud.dev/blob"
	"gocloud.dev/blob/memblob"

	"github.com/oxyfs/oxyfs/store"
	"github.com/oxyfs/oxyfs/store/format"
	"github.com/oxyfs/oxyfs/store/storegen"
	"github.com/oxyfs/oxyfs/testkit/blobtest"
	"github.com/oxyfs/oxyfs/testkit/storefixture"
)

const (
	objA = "ab01020304050607080910111213141516171819202122232425262728293031"
	objB = "ab99999999999999999999999999999999999999999999999999999999999999"
	objC = "cd00112233445566778899aabbccddeeff00112233445566778899aabbccddee"
	objD = "ef0123"
)

func TestFoldedOpenCostsOneListAndListsPlusTwoGets(t *testing.T) {
	ctx := context.Background()
	st := storefixture.NewMem(t)
	complete := []format.Entry{storefixture.Ent(format.KindSig, objA, "alice"), storefixture.Ent(format.KindSeal, objC, "s1")}
	part1 := []format.Entry{storefixture.Ent(format.KindSig, objB, "bob")}
	part2 := []format.Entry{storefixture.Ent(format.KindReceipt, objD, "runner-1")}
	journal := []format.Entry{storefixture.Ent(format.KindApproval, objC, "carol"), storefixture.Ent(format.KindSig, objA, "dave")}
	all := slices.Concat(complete, part1, part2, journal)
	storefixture.PutEntries(t, st, all...)
	storefixture.WriteEntryList(t, st, true, complete...)
	storefixture.WriteEntryList(t, st, false, part1...)
	storefixture.WriteEntryList(t, st, false, part2...)
	old := storefixture.WriteEntryList(t, st, true, storefixture.Ent(format.KindSig, objA, "retired-only"))
	storefixture.Retire(t, st, old)
	storefixture.WriteJournal(t, st, 0, journal...)

	ix, w := openIndex(t, st)
	d := storefixture.Delta(st, func() {
		if err := ix.Load(ctx); err != nil {
			t.Fatal(err)
		}
	})
	// 1 LIST (one page of pack-) + 3 live lists + journal + retired record.
	if want := (store.Counts{List: 1, Get: 5}); d != want {
		t.Fatalf("open sent %v, want %v", d, want)
	}
	s := ix.Status()
	if s.OpenRequests != d || s.Mode != ModeFolded || !s.Folded || len(s.LiveLists) != 3 || len(s.RetiredLists) != 1 {
		t.Fatalf("status: %+v", s)
	}
	if got, want := walkEntries(t, ix), keysOf(all); !slices.Equal(got, want) {
		t.Fatalf("tree holds\n%v\nwant\n%v", got, want)
	}
	if s.Entries != len(all) || s.JournalLines != 2 || len(w.all()) != 0 {
		t.Fatalf("status %+v, warnings %v", s, w.all())
	}
	// Load is idempotent.
	if d := storefixture.Delta(st, func() { ix.Load(ctx) }); d.Total() != 0 {
		t.Fatalf("second Load sent %v", d)
	}
	n, err := ix.Stat(ctx, "sig/ab/"+objA[2:]+"/dave")
	if err != nil || n.Source != sourceJournal || n.Type != NodeFile || n.Size != -1 {
		t.Fatalf("Stat: %+v %v", n, err)
	}
	n, err = ix.Stat(ctx, "sig/ab/"+objB[2:]+"/bob")
	if err != nil || !strings.HasPrefix(n.Source, "list pack-") || !strings.HasSuffix(n.Source, ".entries-part") {
		t.Fatalf("Stat: %+v %v", n, err)
	}
}

func TestFoldedReaderNeverListsPrefixes(t *testing.T) {
	ctx := context.Background()
	st := storefixture.NewMem(t)
	var es []format.Entry
	if _, err := storegen.Generate(ctx, st, storegen.Options{Entries: 2000, Seed: 3, Fold: true, Legacy: 20,
		OnEntry: func(e format.Entry, _ string) { es = append(es, e) }}); err != nil {
		t.Fatal(err)
	}
	// Journal lines after the fold.
	if _, err := storegen.Generate(ctx, st, storegen.Options{Entries: 100, Seed: 4,
		OnEntry: func(e format.Entry, _ string) { es = append(es, e) }}); err != nil {
		t.Fatal(err)
	}
	ix, _ := openIndex(t, st)
	if err := ix.Load(ctx); err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	var walked []string
	d := storefixture.Delta(st, func() {
		for i := 0; i < 10000; i++ {
			e := es[rng.IntN(len(es))]
			p := e.Key()
			if i%3 == 0 {
				p = objectPath(e.Kind, e.Object) + "/nobody" // absent
			}
			if i%7 == 0 {
				p = objectPath(e.Kind, e.Object) // a directory
			}
			if _, err := ix.Stat(ctx, p); err != nil && !errors.Is(err, fs.ErrNotExist) {
				t.Fatal(err)
			}
		}
		err := fs.WalkDir(ix.FS(), ".", func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.Type().IsRegular() && !strings.HasPrefix(p, BySigner) {
				walked = append(walked, p)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	})
	if d.Total() != 0 {
		t.Fatalf("10000 Stat + a walk sent %v, want nothing", d)
	}
	if want := keysOf(es); !slices.Equal(walked, want) {
		t.Fatalf("walk found %d files, want %d", len(walked), len(want))
	}
}

func TestRetiredListNotRead(t *testing.T) {
	ctx := context.Background()
	st := storefixture.NewMem(t)
	kept := storefixture.Ent(format.KindSig, objA, "alice")
	gone := storefixture.Ent(format.KindSig, objB, "only-in-the-retired-list")
	older := storefixture.Ent(format.KindSig, objC, "older-writer") // per-object key only
	storefixture.PutEntries(t, st, kept, gone, older)
	old := storefixture.WriteEntryList(t, st, true, kept, gone)
	storefixture.WriteEntryList(t, st, true, kept)
	storefixture.Retire(t, st, old)

	ix, _ := openIndex(t, st)
	d := storefixture.Delta(st, func() {
		if err := ix.Load(ctx); err != nil {
			t.Fatal(err)
		}
	})
	if want := (store.Counts{List: 1, Get: 3}); d != want {
		t.Fatalf("open sent %v, want %v (the retired list must not be read)", d, want)
	}
	if got := walkEntries(t, ix); !slices.Equal(got, []string{kept.Key()}) {
		t.Fatalf("tree: %v", got)
	}
	for _, e := range []format.Entry{gone, older} {
		if _, err := ix.Stat(ctx, e.Key()); !errors.Is(err, fs.ErrNotExist) {
			t.Fatalf("Stat %s: %v, want not found", e.Key(), err)
		}
	}
}

// zstdText compresses raw text, for lists no encoder would write.
func zstdText(t *testing.T, text string) []byte {
	t.Helper()
	enc, err := zstd.NewWriter(nil)
	if err != nil {
		t.Fatal(err)
	}
	defer enc.Close()
	return enc.EncodeAll([]byte(text), nil)
}

func TestCorruptListFallsBackToPrefixListing(t *testing.T) {
	a, b := storefixture.Ent(format.KindSig, objA, "alice"), storefixture.Ent(format.KindSeal, objC, "s1")
	cases := map[string][]byte{
		"not zstd":   []byte("this is not a zstd stream"),
		"bad header": zstdText(t, "oxy-entries 2\n"+a.Key()+"\n"),
		"unsorted":   zstdText(t, "oxy-entries 1\n"+a.Key()+"\n"+b.Key()+"\n"),
		"truncated":  zstdText(t, "oxy-entries 1\n"+a.Key()),
	}
	for name, data := range cases {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			st := storefixture.NewMem(t)
			storefixture.PutEntries(t, st, a, b)
			if err := st.Put(ctx, format.EntryListName(strings.Repeat("ab", 32), true), data); err != nil {
				t.Fatal(err)
			}
			if err := st.Put(ctx, format.LegacyFoldedMarker, nil); err != nil {
				t.Fatal(err)
			}
			ix, w := openIndex(t, st)
			if err := ix.Load(ctx); err != nil {
				t.Fatal(err)
			}
			if s := ix.Status(); s.Mode != ModePrefixListing || s.Folded {
				t.Fatalf("mode %q folded %v", s.Mode, s.Folded)
			}
			ws := w.all()
			if len(ws) != 1 || !strings.Contains(ws[0], "falling back to prefix listing") || !strings.Contains(ws[0], "pack-abab") {
				t.Fatalf("warnings: %q", ws)
			}
			var got []string
			d := storefixture.Delta(st, func() { got = walkEntries(t, ix) })
			if want := keysOf([]format.Entry{a, b}); !slices.Equal(got, want) {
				t.Fatalf("tree %v, want %v", got, want)
			}
			if d.List == 0 {
				t.Fatalf("prefix listing sent no LIST")
			}
			// A refresh meets the same list: no second warning.
			if err := ix.Refresh(ctx); err != nil {
				t.Fatal(err)
			}
			if ws := w.all(); len(ws) != 1 {
				t.Fatalf("warned again: %q", ws)
			}
		})
	}
}

func TestMalformedKeySkippedAndReported(t *testing.T) {
	ctx := context.Background()
	st := storefixture.NewMem(t)
	good := []format.Entry{storefixture.Ent(format.KindSig, objA, "alice"), storefixture.Ent(format.KindCert, objC, "k1")}
	keys := []string{
		"bogus/ab/cdef/x",   // unknown kind
		good[1].Key(),       // cert/...
		"sig/AB/cdef/x",     // uppercase hh
		good[0].Key(),       // sig/ab/...
		"sig/ab/c/x",        // odd object
		"sig/ab/cdef/..",    // bad value
		"sig/ab/cdef/x/y/z", // value with a slash
	}
	slices.Sort(keys)
	id, data, err := format.EncodeEntryListSorted(keys)
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Put(ctx, format.EntryListName(id, true), data); err != nil {
		t.Fatal(err)
	}
	j := storefixture.Ent(format.KindSeal, objD, "s")
	storefixture.WriteJournalText(t, st, "0 "+j.Key()+"\n0 sig/zz/0000/x\nnot a line\n")
	ix, w := openIndex(t, st)
	if err := ix.Load(ctx); err != nil {
		t.Fatal(err)
	}
	s := ix.Status()
	if s.Mode != ModeFolded || s.Malformed != 7 {
		t.Fatalf("mode %q malformed %d, want folded and 7", s.Mode, s.Malformed)
	}
	if got, want := walkEntries(t, ix), keysOf(append(good, j)); !slices.Equal(got, want) {
		t.Fatalf("tree %v, want %v", got, want)
	}
	ws := w.all()
	if len(ws) != 2 || !hasWarning(ws, "skipped 5 malformed entry keys in pack-") || !hasWarning(ws, "skipped 2 malformed entry keys in the journal") {
		t.Fatalf("want one warning per source with a count: %q", ws)
	}
	if !hasWarning(ws, "first:") {
		t.Fatalf("warnings give no example: %q", ws)
	}
}

func TestPutBeforeLoadAndStatusBeforeLoad(t *testing.T) {
	st := storefixture.NewMem(t)
	ix, _ := openIndex(t, st)
	if d := storefixture.Delta(st, func() { ix.Status() }); d.Total() != 0 {
		t.Fatalf("Status sent %v", d)
	}
	if s := ix.Status(); s.Loaded {
		t.Fatal("loaded before any lookup")
	}
}

func TestListGoneRereadsSnapshotThenFallsBack(t *testing.T) {
	ctx := context.Background()
	// A list the pack listing shows but a GET does not find: what a reader
	// sees when a collection deletes the list between its LIST and its GET.
	// (A dangling symbolic link in a file:// store did this once; links are
	// no keys there now, so a GET hook answers "not found".)
	gone := format.EntryListName(strings.Repeat("cd", 32), false)
	inner := memblob.OpenBucket(nil)
	drv := blobtest.New(inner)
	drv.SetHooks(blobtest.Hooks{Before: func(ctx context.Context, op blobtest.Op, key string) error {
		if op == blobtest.OpGet && key == gone {
			_, err := inner.ReadAll(ctx, "no such key")
			return err
		}
		return nil
	}})
	st := store.New(blob.NewBucket(drv), "mem", "", store.Options{Layout: store.LayoutBucket})
	defer st.Close()
	a := storefixture.Ent(format.KindSig, objA, "alice")
	storefixture.PutEntries(t, st, a)
	storefixture.WriteEntryList(t, st, true, a)
	if err := st.Put(ctx, format.LegacyFoldedMarker, nil); err != nil {
		t.Fatal(err)
	}
	if err := st.Put(ctx, gone, []byte("deleted")); err != nil {
		t.Fatal(err)
	}
	ix, w := openIndex(t, st)
	d := storefixture.Delta(st, func() {
		if err := ix.Load(ctx); err != nil {
			t.Fatal(err)
		}
	})
	// Snapshot, both lists, the snapshot again, both lists again.
	if want := (store.Counts{List: 2, Get: 8}); d != want {
		t.Fatalf("open sent %v, want %v", d, want)
	}
	if s := ix.Status(); s.Mode != ModePrefixListing {
		t.Fatalf("mode %s", s.Mode)
	}
	if ws := w.all(); len(ws) != 1 || !strings.Contains(ws[0], "gone") || !strings.Contains(ws[0], gone) {
		t.Fatalf("warnings %q", ws)
	}
	if got := walkEntries(t, ix); !slices.Equal(got, []string{a.Key()}) {
		t.Fatalf("tree %v", got)
	}
}
