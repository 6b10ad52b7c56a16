package fs

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/oxyfs/oxyfs/index"
	"github.com/oxyfs/oxyfs/store/format"
	"github.com/oxyfs/oxyfs/testkit/storefixture"
)

// viewIDIndex is a folded store of n sig objects and a few of other kinds,
// with two objects whose ids share their first 60 bits (one view id key)
// and one short id.
func viewIDIndex(t testing.TB, n int) (*index.Index, []format.Entry) {
	t.Helper()
	r := rand.New(rand.NewPCG(3, 4))
	var es []format.Entry
	for range n {
		es = append(es, storefixture.Ent(format.KindSig, fmt.Sprintf("%016x%016x", r.Uint64(), r.Uint64()), "alice"))
	}
	es = append(es,
		storefixture.Ent(format.KindSig, "0123456789abcde0aaaa", "bob"), // shares 60 bits with the next
		storefixture.Ent(format.KindSig, "0123456789abcde0bbbb", "bob"),
		storefixture.Ent(format.KindSig, "beef", "carol"),
		storefixture.Ent(format.KindSeal, "beef", "change-1"),
		storefixture.Ent(format.KindAccepted, "00ff", "main"),
	)
	st := storefixture.NewMem(t)
	storefixture.PutEntries(t, st, es...)
	storefixture.WriteEntryList(t, st, true, es...)
	ix := openIndex(t, st)
	if err := ix.Load(context.Background()); err != nil {
		t.Fatal(err)
	}
	return ix, es
}

// dirsOf lists the kind, <hh> and object directories of the entries.
func dirsOf(es []format.Entry) []string {
	seen := map[string]bool{}
	var out []string
	for _, e := range es {
		k := e.Kind.String()
		for _, p := range []string{k, k + "/" + e.Object[:2], k + "/" + e.Object[:2] + "/" + e.Object[2:]} {
			if !seen[p] {
				seen[p] = true
				out = append(out, p)
			}
		}
	}
	return out
}

// TestViewIDsNameTheirDirectory: the view id of every directory of the
// tree leads back to it (decode(encode(p)) == p), ids are distinct, the
// objects that share a key get ids of the table, and ids the kernel
// forgot leave it — with keys of 59 bits and with keys shortened to force
// collisions between many objects.
func TestViewIDsNameTheirDirectory(t *testing.T) {
	ctx := context.Background()
	ix, es := viewIDIndex(t, 2000)
	// An own write: in no view's set, so in the table.
	own := storefixture.Ent(format.KindSig, "abcdef0123456789", "dave")
	if err := ix.Put(ctx, own, []byte("#sig")); err != nil {
		t.Fatal(err)
	}
	es = append(es, own)
	dirs := append(dirsOf(es), "sig/77/7777") // a directory only mkdir made
	for _, bits := range []uint{viewKeyBits, 12, 8} {
		t.Run(fmt.Sprint(bits), func(t *testing.T) {
			var v viewIDs
			v.init(ix, bits)
			ids := map[uint64]string{}
			table := 0
			for _, p := range dirs {
				at, ok := index.ParsePath(p)
				if !ok {
					t.Fatalf("ParsePath(%q)", p)
				}
				if id, ok := v.id(ctx, p, at, false); ok && isTable(id) {
					t.Fatalf("%s: a table id before any lookup", p)
				}
				id := v.mustID(t, ctx, p, at)
				if again := v.mustID(t, ctx, p, at); again != id {
					t.Fatalf("%s: id %x, then %x", p, id, again)
				}
				if !isViewID(id) {
					t.Fatalf("%s: id %x is no view id", p, id)
				}
				if q, ok := ids[id]; ok {
					t.Fatalf("%s and %s share id %x", p, q, id)
				}
				ids[id] = p
				if isTable(id) {
					table++
				}
				got, gt, ok := v.dir(ctx, id)
				if !ok || got != p || gt != at {
					t.Fatalf("dir(id(%q) = %x) = %q %+v %v", p, id, got, gt, ok)
				}
				if again, _ := v.id(ctx, p, at, false); again != id {
					t.Fatalf("%s: id %x, then %x", p, id, again)
				}
			}
			// The two objects sharing 60 bits, the own write and the
			// mkdir's directory at least; with short keys, most objects.
			if table < 4 || bits == 8 && table < 1000 {
				t.Fatalf("%d table ids", table)
			}
			if v.tableLen() != table {
				t.Fatalf("table holds %d, %d ids given", v.tableLen(), table)
			}
			// Each table id was looked up twice (mustID): forgetting one
			// keeps it, forgetting the other drops it.
			for id, p := range ids {
				v.forget(id, 1)
				if _, _, ok := v.dir(ctx, id); !ok {
					t.Fatalf("%s: forgot after one of two lookups", p)
				}
				v.forget(id, 1)
				if _, _, ok := v.dir(ctx, id); ok == isTable(id) {
					t.Fatalf("%s (%x): named after its lookups were forgotten: %v", p, id, ok)
				}
			}
			if v.tableLen() != 0 {
				t.Fatalf("table holds %d after every forget", v.tableLen())
			}
		})
	}
}

func isTable(id uint64) bool {
	return id&(viewBit|viewObjBit|7<<viewShift) == viewBit|viewTypeTable<<viewShift
}

// mustID is id with a lookup.
func (v *viewIDs) mustID(t *testing.T, ctx context.Context, p string, at index.Path) uint64 {
	t.Helper()
	id, ok := v.id(ctx, p, at, true)
	if !ok {
		t.Fatalf("%s: no id", p)
	}
	return id
}

// FuzzViewIDDir: any node id either names no directory or names one whose
// id it is.
func FuzzViewIDDir(f *testing.F) {
	for _, id := range []uint64{0, 1, viewBit, viewBit | viewObjBit, viewBit | viewTypeKind<<viewShift | 7,
		viewBit | viewTypeHH<<viewShift | 0x1ff, viewBit | viewTypeTable<<viewShift | 1, ^uint64(0)} {
		f.Add(id)
	}
	ix, _ := viewIDIndex(f, 50)
	f.Fuzz(func(t *testing.T, id uint64) {
		ctx := context.Background()
		var v viewIDs
		v.init(ix, 8)
		p, at, ok := v.dir(ctx, id)
		if !ok {
			return
		}
		back, ok := v.id(ctx, p, at, false)
		if !ok || back != id {
			t.Fatalf("dir(%x) = %q, whose id is %x %v", id, p, back, ok)
		}
	})
}
