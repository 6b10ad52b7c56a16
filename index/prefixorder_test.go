package index

import (
	"context"
	"errors"
	"io/fs"
	"slices"
	"testing"

	"github.com/oxyfs/oxyfs/store/format"
	"github.com/oxyfs/oxyfs/testkit/storefixture"
)

// A handle in the prefix modes lists lazily, once per open: a directory
// may be listed before its parent and the parent after a change. The
// simulation's seed 44069 (mem, op 287): a read listed sig/aa/01/ while
// it was empty; an older writer then put sig/aa/01/bob; the walk's first
// listing of sig/aa/ named 01, and ReadDir sig/aa/01 answered from the
// listing made before: does not exist. A listing never names a directory
// that reading then says is absent.
func TestAListedDirectoryIsNeverAbsent(t *testing.T) {
	ctx := context.Background()
	st := storefixture.NewMem(t)
	if err := st.Put(ctx, format.LegacyFoldedMarker, nil); err != nil {
		t.Fatal(err)
	}
	other := storefixture.Ent(format.KindSeal, objC, "s1") // so the store is not empty
	storefixture.PutEntries(t, st, other)
	ix, _ := openIndex(t, st)
	sig := storefixture.Ent(format.KindSig, objA, "bob")
	obj := objectPath(format.KindSig, objA)
	hh := "sig/" + objA[:2]
	absent := func(dir string) {
		t.Helper()
		if _, err := ix.ReadDir(ctx, dir); !errors.Is(err, fs.ErrNotExist) {
			t.Fatalf("ReadDir %s before the put: %v, want does not exist", dir, err)
		}
	}

	t.Run("object listed before its <hh>", func(t *testing.T) {
		absent(obj) // lists sig/ab/01…/: empty
		storefixture.PutEntries(t, st, sig)
		if got := mustReadDir(t, ix, hh); !slices.Contains(got, objA[2:]) {
			t.Fatalf("%s: %v, want %s named", hh, got, objA[2:])
		}
		if got := mustReadDir(t, ix, obj); !slices.Equal(got, []string{"bob"}) {
			t.Fatalf("%s: %v", obj, got)
		}
		if _, err := ix.Stat(ctx, obj); err != nil {
			t.Fatal(err)
		}
	})
	if err := ix.Refresh(ctx); err != nil {
		t.Fatal(err)
	}
	if err := st.Delete(ctx, sig.Key()); err != nil {
		t.Fatal(err)
	}
	if err := ix.Refresh(ctx); err != nil {
		t.Fatal(err)
	}
	t.Run("<hh> listed before its kind", func(t *testing.T) {
		absent(hh) // lists sig/ab/: empty
		storefixture.PutEntries(t, st, sig)
		if got := mustReadDir(t, ix, "sig"); !slices.Contains(got, objA[:2]) {
			t.Fatalf("sig: %v, want %s named", got, objA[:2])
		}
		if got := mustReadDir(t, ix, hh); !slices.Equal(got, []string{objA[2:]}) {
			t.Fatalf("%s: %v", hh, got)
		}
	})
	if err := ix.Refresh(ctx); err != nil {
		t.Fatal(err)
	}
	t.Run("object listed before its <hh>, then gone", func(t *testing.T) {
		if got := mustReadDir(t, ix, obj); !slices.Equal(got, []string{"bob"}) {
			t.Fatalf("%s: %v", obj, got)
		}
		if err := st.Delete(ctx, sig.Key()); err != nil {
			t.Fatal(err)
		}
		// The <hh> listing is newer and names no 01…: neither may the object's.
		if _, err := ix.ReadDir(ctx, hh); !errors.Is(err, fs.ErrNotExist) {
			t.Fatalf("ReadDir %s: %v, want does not exist", hh, err)
		}
		if _, err := ix.Stat(ctx, obj); !errors.Is(err, fs.ErrNotExist) {
			t.Fatalf("Stat %s after its <hh> listed it gone: %v, want does not exist", obj, err)
		}
	})
}
