package index

import (
	"bytes"
	"context"
	"errors"
	"io/fs"
	"slices"
	"testing"

	"github.com/oxyfs/oxyfs/store"
	"github.com/oxyfs/oxyfs/store/format"
	"github.com/oxyfs/oxyfs/testkit/storefixture"
)

func mustReadDir(t *testing.T, ix *Index, dir string) []string {
	t.Helper()
	nodes, err := ix.ReadDir(context.Background(), dir)
	if err != nil {
		t.Fatalf("ReadDir %q: %v", dir, err)
	}
	return names(nodes)
}

func TestUnfoldedStoreListsPerObjectPrefix(t *testing.T) {
	ctx := context.Background()
	st := storefixture.NewMem(t)
	a1, a2 := storefixture.Ent(format.KindSig, objA, "alice"), storefixture.Ent(format.KindSig, objA, "bob")
	b1 := storefixture.Ent(format.KindSig, objB, "carol")
	c1 := storefixture.Ent(format.KindSeal, objC, "s1")
	older := storefixture.Ent(format.KindSig, objC, "older-writer") // per-object key only
	journalOnly := storefixture.Ent(format.KindSig, objD, "journal-only")
	storefixture.PutEntries(t, st, a1, a2, b1, c1, older)
	storefixture.WriteJournal(t, st, 0, a1, a2, b1, c1, journalOnly)
	if err := st.Put(ctx, format.LegacyFoldedMarker, nil); err != nil {
		t.Fatal(err)
	}
	ix, _ := openIndex(t, st)
	if d := storefixture.Delta(st, func() { ix.Load(ctx) }); d != (store.Counts{List: 1, Get: 2}) {
		t.Fatalf("open sent %v, want 1 LIST + 2 GET", d)
	}
	if s := ix.Status(); s.Mode != ModePrefixListing || s.Folded || s.LegacyRead {
		t.Fatalf("status %+v", s)
	}
	check := func(what string, want store.Counts, fn func()) {
		t.Helper()
		if d := storefixture.Delta(st, fn); d != want {
			t.Fatalf("%s sent %v, want %v", what, d, want)
		}
	}
	// The journal names objD, whose key does not exist: a store that is
	// not folded is read by listing (spec §13.7 "Reading"), so it is not
	// shown (a ghost whose bytes cannot be read).
	check("ReadDir sig", store.Counts{List: 1}, func() {
		if got := mustReadDir(t, ix, "sig"); !slices.Equal(got, []string{"ab", "cd"}) {
			t.Fatalf("sig: %v", got)
		}
	})
	check("ReadDir sig again", store.Counts{}, func() { mustReadDir(t, ix, "sig") })
	check("ReadDir sig/ab", store.Counts{List: 1}, func() {
		if got := mustReadDir(t, ix, "sig/ab"); !slices.Equal(got, []string{objA[2:], objB[2:]}) {
			t.Fatalf("sig/ab: %v", got)
		}
	})
	check("ReadDir of an object", store.Counts{List: 1}, func() {
		if got := mustReadDir(t, ix, objectPath(format.KindSig, objA)); !slices.Equal(got, []string{"alice", "bob"}) {
			t.Fatalf("object: %v", got)
		}
	})
	check("Stat in a listed object", store.Counts{}, func() {
		if n, err := ix.Stat(ctx, a2.Key()); err != nil || n.Source != sourcePrefixListing {
			t.Fatalf("Stat: %+v %v", n, err)
		}
	})
	check("Stat of an older writer's entry", store.Counts{List: 1}, func() {
		if _, err := ix.Stat(ctx, older.Key()); err != nil {
			t.Fatal(err)
		}
	})
	check("Stat of a journal-only entry", store.Counts{List: 1}, func() {
		if n, err := ix.Stat(ctx, journalOnly.Key()); !errors.Is(err, fs.ErrNotExist) {
			t.Fatalf("Stat of a key only the journal names: %+v %v, want not found", n, err)
		}
	})
	check("Stat of an absent entry", store.Counts{List: 1}, func() {
		if _, err := ix.Stat(ctx, "seal/ab/"+objA[2:]+"/x"); !errors.Is(err, fs.ErrNotExist) {
			t.Fatalf("Stat: %v", err)
		}
	})
	// A refresh drops the listings: they are kept for one open.
	check("Refresh", store.Counts{List: 1, Get: 2}, func() {
		if err := ix.Refresh(ctx); err != nil {
			t.Fatal(err)
		}
	})
	check("ReadDir sig after refresh", store.Counts{List: 1}, func() { mustReadDir(t, ix, "sig") })
}

func TestLegacyListsReadUntilMarker(t *testing.T) {
	ctx := context.Background()
	st := storefixture.NewMem(t)
	both := storefixture.Ent(format.KindSig, objA, "alice") // per-object key and legacy line
	storefixture.PutEntries(t, st, both)
	legacySigs := format.LegacySigs([]format.LegacySig{{Signer: "alice", Sig: []byte("old alice")}, {Signer: "zed", Sig: []byte("zed's sig")}})
	for key, data := range map[string][]byte{
		format.LegacyKey(format.KindSig, objA):  legacySigs,
		format.LegacyKey(format.KindSeal, objC): format.LegacyValues([]string{"s1", "s2"}),
	} {
		if err := st.Put(ctx, key, data); err != nil {
			t.Fatal(err)
		}
	}
	ix, _ := openIndex(t, st)
	if err := ix.Load(ctx); err != nil {
		t.Fatal(err)
	}
	if s := ix.Status(); !s.LegacyRead || s.Mode != ModePrefixListing {
		t.Fatalf("status %+v", s)
	}
	var nodes []Node
	d := storefixture.Delta(st, func() {
		var err error
		if nodes, err = ix.ReadDir(ctx, objectPath(format.KindSig, objA)); err != nil {
			t.Fatal(err)
		}
	})
	if d != (store.Counts{List: 1, Get: 1}) {
		t.Fatalf("object read sent %v, want its listing and its legacy list", d)
	}
	if len(nodes) != 2 || nodes[0].Name != "alice" || nodes[0].Source != sourcePrefixListing ||
		nodes[1].Name != "zed" || nodes[1].Source != "legacy sigs/ab/"+objA[2:] || nodes[1].Size != int64(len("zed's sig")) {
		t.Fatalf("nodes %+v", nodes)
	}
	// Legacy bytes come from the legacy list; a per-object key wins.
	d = storefixture.Delta(st, func() {
		if b, err := ix.ReadSig(ctx, nodes[1].Entry); err != nil || string(b) != "zed's sig" {
			t.Fatalf("legacy sig %q %v", b, err)
		}
	})
	if d.Total() != 0 {
		t.Fatalf("reading a legacy signature sent %v", d)
	}
	if b, err := ix.ReadSig(ctx, both); err != nil || string(b) != string(storefixture.SigBytes(both.Key())) {
		t.Fatalf("per-object sig %q %v", b, err)
	}
	if got := walkEntries(t, ix); !slices.Equal(got, []string{
		"seal/cd/" + objC[2:] + "/s1", "seal/cd/" + objC[2:] + "/s2", both.Key(), "sig/ab/" + objA[2:] + "/zed"}) {
		t.Fatalf("tree %v", got)
	}
	if got := mustReadDir(t, ix, "by-signer/zed"); !slices.Equal(got, []string{objA}) {
		t.Fatalf("by-signer/zed: %v", got)
	}

	// Once the marker is there, the older lists are not read.
	if err := st.Put(ctx, format.LegacyFoldedMarker, nil); err != nil {
		t.Fatal(err)
	}
	if err := ix.Refresh(ctx); err != nil {
		t.Fatal(err)
	}
	if ix.Status().LegacyRead {
		t.Fatal("legacy still read after the marker")
	}
	d = storefixture.Delta(st, func() {
		if got := mustReadDir(t, ix, objectPath(format.KindSig, objA)); !slices.Equal(got, []string{"alice"}) {
			t.Fatalf("object after marker: %v", got)
		}
	})
	if d != (store.Counts{List: 1}) {
		t.Fatalf("object read after the marker sent %v", d)
	}
}

func TestFoldedReaderIgnoresLegacyLists(t *testing.T) {
	ctx := context.Background()
	st := storefixture.NewMem(t)
	a := storefixture.Ent(format.KindSig, objA, "alice")
	storefixture.PutEntries(t, st, a)
	storefixture.WriteEntryList(t, st, true, a)
	if err := st.Put(ctx, format.LegacyKey(format.KindSig, objB), format.LegacySigs([]format.LegacySig{{Signer: "x", Sig: []byte{1}}})); err != nil {
		t.Fatal(err)
	}
	ix, _ := openIndex(t, st)
	var got []string
	d := storefixture.Delta(st, func() { got = walkEntries(t, ix) })
	if d != (store.Counts{List: 1, Get: 3}) || !slices.Equal(got, []string{a.Key()}) {
		t.Fatalf("sent %v, tree %v", d, got)
	}
}

func TestDirectoryLayoutListsPrefixes(t *testing.T) {
	ctx := context.Background()
	st := newFile(t, store.LayoutDirectory)
	a, b := storefixture.Ent(format.KindSig, objA, "alice"), storefixture.Ent(format.KindAccepted, objD, "att")
	storefixture.PutEntries(t, st, a, b)
	ix, _ := openIndex(t, st)
	if d := storefixture.Delta(st, func() { ix.Load(ctx) }); d != (store.Counts{Head: 1}) {
		t.Fatalf("open of a directory sent %v, want one HEAD of the marker", d)
	}
	if s := ix.Status(); s.Mode != ModeDirectory || !s.LegacyRead {
		t.Fatalf("status %+v", s)
	}
	if got := walkEntries(t, ix); !slices.Equal(got, keysOf([]format.Entry{a, b})) {
		t.Fatalf("tree %v", got)
	}
	// A write in a directory has no journal: just the key.
	c := storefixture.Ent(format.KindSig, objC, "carol")
	d := storefixture.Delta(st, func() {
		if err := ix.Put(ctx, c, []byte("sig")); err != nil {
			t.Fatal(err)
		}
	})
	if d != (store.Counts{Put: 1}) {
		t.Fatalf("directory put sent %v", d)
	}
	if b, err := ix.ReadSig(ctx, c); err != nil || !bytes.Equal(b, []byte("sig")) {
		t.Fatalf("ReadSig %q %v", b, err)
	}
	if got := mustReadDir(t, ix, "by-signer"); !slices.Equal(got, []string{"alice", "carol"}) {
		t.Fatalf("by-signer %v", got)
	}
}
