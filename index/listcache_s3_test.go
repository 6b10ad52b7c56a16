package index

import (
	"context"
	"slices"
	"testing"

	"github.com/oxyfs/oxyfs/store"
	"github.com/oxyfs/oxyfs/store/storegen"
	"github.com/oxyfs/oxyfs/testkit/storefixture"
	"github.com/oxyfs/oxyfs/testkit/testservers"
)

// Over a real S3 server (versitygw): the first open with the list cache
// GETs the entry list and caches it; a second open, on a new handle as a
// second mount would, GETs the journal and the retired record only and
// builds the identical set.
func TestListCacheSecondOpenOverS3GetsNoList(t *testing.T) {
	srv := testservers.Start(t, "s3")
	ctx := context.Background()
	url := srv.NewBucket(t)
	open := func() *store.Store {
		st, err := store.Open(ctx, url, store.Options{Layout: store.LayoutBucket})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close() })
		return st
	}
	st := open()
	if _, err := storegen.Generate(ctx, st, storegen.Options{Entries: 20000, Seed: 9, Fold: true, SkipObjects: true}); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	plain, _ := openCached(t, st, "", 0)
	var first, second *Index
	d1 := storefixture.Delta(st, func() { first, _ = openCached(t, st, dir, 0) })
	if want := (store.Counts{List: 1, Get: 3}); d1 != want {
		t.Fatalf("the first open sent %v, want %v (the snapshot and the list)", d1, want)
	}
	st2 := open()
	d2 := storefixture.Delta(st2, func() { second, _ = openCached(t, st2, dir, 0) })
	if want := (store.Counts{List: 1, Get: 2}); d2 != want {
		t.Fatalf("the second open sent %v, want %v (the snapshot alone: the list mapped from the cache)", d2, want)
	}
	want := setText(plain)
	for name, ix := range map[string]*Index{"first": first, "second": second} {
		if got := setText(ix); !slices.Equal(got, want) {
			t.Fatalf("the %s open's set differs from one without the cache: %v", name, firstDiff(got, want))
		}
		if got, w := walkEntries(t, ix), walkEntries(t, plain); !slices.Equal(got, w) {
			t.Fatalf("the %s open's tree differs", name)
		}
	}
}
