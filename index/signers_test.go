package index

import (
	"context"
	"fmt"
	"slices"
	"testing"

	"github.com/oxyfs/oxyfs/store"
	"github.com/oxyfs/oxyfs/store/format"
	"github.com/oxyfs/oxyfs/testkit/storefixture"
)

// walkPages follows a listing page by page, forward from the first (Next,
// After the last name) and back from the last (Prev, Before the first),
// and returns the names of each walk. It checks each page's flags.
func walkPages(t *testing.T, limit int, page func(Page) ([]string, PageInfo)) (forward, backward []string) {
	t.Helper()
	p := Page{Limit: limit}
	for n := 0; ; n++ {
		names, info := page(p)
		if len(names) > limit || (n > 0) != info.Prev || (info.Next && len(names) != limit) {
			t.Fatalf("page %d after %q: %d names %v, %+v", n, p.After, len(names), names, info)
		}
		forward = append(forward, names...)
		if !info.Next {
			break
		}
		p.After = names[len(names)-1]
	}
	p = Page{Limit: limit, Before: "\U0010ffff"}
	for n := 0; ; n++ {
		names, info := page(p)
		if len(names) > limit || (n > 0) != info.Next || (info.Prev && len(names) != limit) {
			t.Fatalf("page %d before %q: %d names %v, %+v", n, p.Before, len(names), names, info)
		}
		backward = append(slices.Clone(names), backward...)
		if !info.Prev {
			break
		}
		p.Before = names[0]
	}
	return forward, backward
}

// checkSignerPages holds Signers and SignedBy to ReadDir of by-signer/ and
// by-signer/<signer>/, page by page in both directions, for several page
// sizes.
func checkSignerPages(t *testing.T, ix *Index) {
	t.Helper()
	ctx := context.Background()
	nodes, err := ix.ReadDir(ctx, "by-signer")
	if err != nil {
		t.Fatal(err)
	}
	want := names(nodes)
	counts := map[string]int{}
	for _, s := range want {
		objs, err := ix.ReadDir(ctx, "by-signer/"+s)
		if err != nil {
			t.Fatal(err)
		}
		counts[s] = len(objs)
		for _, limit := range []int{1, 2, 7} {
			fwd, back := walkPages(t, limit, func(p Page) ([]string, PageInfo) {
				objs, info, err := ix.SignedBy(ctx, s, p)
				if err != nil {
					t.Fatal(err)
				}
				return objs, info
			})
			if !slices.Equal(fwd, names(objs)) || !slices.Equal(back, names(objs)) {
				t.Errorf("SignedBy(%s) by %d: forward %v, backward %v; ReadDir %v", s, limit, fwd, back, names(objs))
			}
		}
	}
	for _, limit := range []int{1, 2, 3, 100} {
		got := map[string]int{}
		fwd, back := walkPages(t, limit, func(p Page) ([]string, PageInfo) {
			scs, info, err := ix.Signers(ctx, p)
			if err != nil {
				t.Fatal(err)
			}
			var ns []string
			for _, sc := range scs {
				ns = append(ns, sc.Signer)
				got[sc.Signer] = sc.Signatures
			}
			return ns, info
		})
		if !slices.Equal(fwd, want) || !slices.Equal(back, want) {
			t.Errorf("Signers by %d: forward %v, backward %v; ReadDir %v", limit, fwd, back, want)
		}
		for s, n := range counts {
			if got[s] != n {
				t.Errorf("Signers by %d: %s has %d signatures, ReadDir shows %d", limit, s, got[s], n)
			}
		}
	}
	// A cursor between names, and one past every name.
	if scs, info, err := ix.Signers(ctx, Page{After: want[0] + "\x00", Limit: 1}); err != nil || len(scs) != 1 || scs[0].Signer != want[1] || !info.Prev {
		t.Errorf("Signers after a name between %q and %q: %v %+v %v", want[0], want[1], scs, info, err)
	}
	if scs, info, err := ix.Signers(ctx, Page{After: "\U0010ffff"}); err != nil || len(scs) != 0 || !info.Prev || info.Next {
		t.Errorf("Signers after every name: %v %+v %v", scs, info, err)
	}
	if objs, info, err := ix.SignedBy(ctx, "nobody", Page{}); err != nil || len(objs) != 0 || info.Prev || info.Next {
		t.Errorf("SignedBy(nobody): %v %+v %v", objs, info, err)
	}
}

// signerStore writes signatures by several signers over objects of two
// widths, a list holding some and the journal the rest.
func signerStore(t testing.TB, st *store.Store) {
	t.Helper()
	var listed, journaled []format.Entry
	for i := range 12 {
		obj := fmt.Sprintf("%02x%06x", i*21, i)
		if i%4 == 0 {
			obj += "0000" // another width
		}
		for j, s := range []string{"alice", "bob", "carol smith", "dave", "éve"} {
			if (i+j)%3 == 0 {
				continue
			}
			e := storefixture.Ent(format.KindSig, obj, s)
			if i%2 == 0 {
				listed = append(listed, e)
			} else {
				journaled = append(journaled, e)
			}
		}
	}
	storefixture.PutEntries(t, st, append(listed, journaled...)...)
	storefixture.WriteEntryList(t, st, true, listed...)
	storefixture.WriteJournal(t, st, 0, journaled...)
}

// TestSignerPagesAreByReadDir: a folded store's signers and each signer's
// objects, paged either way at any size, are exactly what ReadDir shows,
// own writes included, and paging sends no request.
func TestSignerPagesAreByReadDir(t *testing.T) {
	st := storefixture.NewMem(t)
	signerStore(t, st)
	ix, _ := openIndex(t, st)
	ctx := context.Background()
	if err := ix.Load(ctx); err != nil || !ix.Status().Folded {
		t.Fatalf("load: %v, folded %v", err, ix.Status().Folded)
	}
	if d := storefixture.Delta(st, func() { checkSignerPages(t, ix) }); d.Total() != 0 {
		t.Errorf("paging a folded store sent %v", d)
	}
	// Own writes: a new signer, and a new object of an old one.
	for _, e := range []format.Entry{storefixture.Ent(format.KindSig, "0a0b", "aaron"), storefixture.Ent(format.KindSig, "ff00", "bob")} {
		if err := ix.Put(ctx, e, []byte("own")); err != nil {
			t.Fatal(err)
		}
	}
	checkSignerPages(t, ix)
}

// TestSignerPagesOfAnUnfoldedStore: where lookups list prefixes, the pages
// are ReadDir's too.
func TestSignerPagesOfAnUnfoldedStore(t *testing.T) {
	st := storefixture.NewMem(t)
	signerStore(t, st)
	if err := st.Bucket().Delete(context.Background(), format.JournalKey); err != nil {
		t.Fatal(err)
	}
	live, err := st.ReadSnapshot(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range live.LiveLists() {
		if err := st.Bucket().Delete(context.Background(), l.Name); err != nil {
			t.Fatal(err)
		}
	}
	ix, _ := openIndex(t, st)
	if err := ix.Load(context.Background()); err != nil || ix.Status().Mode != ModePrefixListing {
		t.Fatalf("load: %v, mode %q", err, ix.Status().Mode)
	}
	checkSignerPages(t, ix)
}

// BenchmarkSignerPages: a page of by-signer/ and of a signer's objects
// from a folded set of 1e5 entries (16 signers, ~4,400 signatures each),
// against ReadDir of the whole signer directory, which makes every name.
func BenchmarkSignerPages(b *testing.B) {
	ix, _ := benchEntries(b, 1e5)
	ctx := context.Background()
	scs, _, err := ix.Signers(ctx, Page{})
	if err != nil || len(scs) == 0 {
		b.Fatal(scs, err)
	}
	s := scs[0].Signer
	b.Logf("%d signers; %s signed %d objects", len(scs), s, scs[0].Signatures)
	before := ix.Store().Counts()
	run := func(name string, fn func() error) {
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if err := fn(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
	run("Signers", func() error { _, _, err := ix.Signers(ctx, Page{Limit: 200}); return err })
	run("SignedBy-first", func() error { _, _, err := ix.SignedBy(ctx, s, Page{Limit: 200}); return err })
	run("SignedBy-last", func() error { _, _, err := ix.SignedBy(ctx, s, Page{Limit: 200, Before: "ff"}); return err })
	run("ReadDir-signer", func() error { _, err := ix.ReadDir(ctx, "by-signer/"+s); return err })
	if d := ix.Store().Counts().Sub(before); d.Total() != 0 {
		b.Errorf("paging sent %v", d)
	}
}

// FuzzSignerPage: cursors come from URLs (any bytes); a page is always the
// slice of ReadDir's names the cursor and limit say, with the right flags,
// for signers and for a signer's objects (two widths of objects).
func FuzzSignerPage(f *testing.F) {
	f.Add("", "", uint8(2), "alice")
	f.Add("bob", "", uint8(1), "bob")
	f.Add("", "dave", uint8(3), "carol smith")
	f.Add("0f", "", uint8(1), "alice")
	f.Add("", "7e000006", uint8(2), "éve")
	f.Add("\xff", "a", uint8(0), "zz\x00")
	st := storefixture.NewMem(f)
	signerStore(f, st)
	ix, _ := openIndex(f, st)
	ctx := context.Background()
	nodes, err := ix.ReadDir(ctx, "by-signer")
	if err != nil {
		f.Fatal(err)
	}
	signers := names(nodes)
	oracle := func(all []string, p Page) ([]string, PageInfo) {
		limit := limitOf(p)
		if p.Before != "" {
			j, _ := slices.BinarySearch(all, p.Before)
			i := max(0, j-limit)
			return all[i:j], PageInfo{Prev: i > 0, Next: j < len(all)}
		}
		i := 0
		if p.After != "" {
			var found bool
			if i, found = slices.BinarySearch(all, p.After); found {
				i++
			}
		}
		j := min(len(all), i+limit)
		return all[i:j], PageInfo{Prev: i > 0, Next: j < len(all)}
	}
	f.Fuzz(func(t *testing.T, after, before string, limit uint8, signer string) {
		p := Page{After: after, Before: before, Limit: int(limit % 8)}
		scs, info, err := ix.Signers(ctx, p)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, sc := range scs {
			got = append(got, sc.Signer)
		}
		if want, winfo := oracle(signers, p); !slices.Equal(got, want) || info != winfo {
			t.Fatalf("Signers(%+v) = %q %+v; want %q %+v", p, got, info, want, winfo)
		}
		var all []string
		if objs, err := ix.ReadDir(ctx, "by-signer/"+signer); err == nil {
			all = names(objs)
		}
		objs, info, err := ix.SignedBy(ctx, signer, p)
		if err != nil {
			t.Fatal(err)
		}
		if want, winfo := oracle(all, p); !slices.Equal(objs, want) || info != winfo {
			t.Fatalf("SignedBy(%q, %+v) = %q %+v; want %q %+v", signer, p, objs, info, want, winfo)
		}
	})
}
