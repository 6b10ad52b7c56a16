package index

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"unsafe"

	"github.com/oxyfs/oxyfs/store"
	"github.com/oxyfs/oxyfs/store/format"
	"github.com/oxyfs/oxyfs/store/storegen"
)

// TestReadDirNamesIsReadDirs walks every directory of stores in each state
// a mount serves — folded, with journal lines, unjournaled per-object keys
// found by prefix listings, legacy one-list keys, and own writes the set
// does not hold — and checks that ReadDirNames gives each directory's
// names, inode numbers and types as ReadDir does, and the same error for
// what is no directory (missing, a file, a link).
func TestReadDirNamesIsReadDirs(t *testing.T) {
	ctx := context.Background()
	cases := map[string]storegen.Options{
		"folded":      {Entries: 300, Seed: 11, Fold: true, SkipObjects: true},
		"journal":     {Entries: 120, Seed: 12, Signers: 3},
		"unjournaled": {Entries: 40, Unjournaled: 30, Seed: 13},
		"legacy":      {Entries: 30, Legacy: 25, Seed: 14, Signers: 2},
	}
	for name, o := range cases {
		t.Run(name, func(t *testing.T) {
			st := newFile(t, store.LayoutBucket)
			if _, err := storegen.Generate(ctx, st, o); err != nil {
				t.Fatal(err)
			}
			ix, _ := openIndex(t, st)
			if err := ix.Load(ctx); err != nil {
				t.Fatal(err)
			}
			own := format.Entry{Kind: format.KindSig, Object: "ab" + fmt.Sprintf("%062x", 7), Value: "own-signer"}
			if err := ix.Put(ctx, own, []byte("own sig")); err != nil {
				t.Fatal(err)
			}
			dirs, files := 0, 0
			var walk func(dir string)
			walk = func(dir string) {
				nodes, err := ix.ReadDir(ctx, dir)
				if err != nil {
					t.Fatalf("ReadDir %q: %v", dir, err)
				}
				got, err := ix.ReadDirNames(ctx, dir, nil)
				if err != nil {
					t.Fatalf("ReadDirNames %q: %v", dir, err)
				}
				want := make([]DirName, len(nodes))
				for i, n := range nodes {
					want[i] = DirName{Name: n.Name, Ino: n.Ino, Type: n.Type}
				}
				if !slices.Equal(got, want) {
					t.Fatalf("ReadDirNames %q = %v, ReadDir's %v", dir, got, want)
				}
				dirs++
				for _, n := range nodes {
					p := JoinPath(dir, n.Name)
					if n.Type == NodeDir {
						walk(p)
						continue
					}
					files++
					if files%7 == 0 || n.Type == NodeSymlink && files%3 == 0 {
						sameErr(t, ix, p)
					}
				}
			}
			walk("")
			for _, p := range []string{"sig/zz", "sig/ab/" + fmt.Sprintf("%062x", 8), "by-signer/nobody", "nope", "sig/ab/x/y/z"} {
				sameErr(t, ix, p)
			}
			if dirs < 10 || files < o.Entries {
				t.Fatalf("walked %d directories and %d files: the store is not what the test means", dirs, files)
			}
		})
	}
}

// sameErr checks that ReadDir and ReadDirNames of p fail alike.
func sameErr(t *testing.T, ix *Index, p string) {
	t.Helper()
	ctx := context.Background()
	_, err1 := ix.ReadDir(ctx, p)
	got, err2 := ix.ReadDirNames(ctx, p, nil)
	if err1 == nil || err2 == nil || err1.Error() != err2.Error() || len(got) != 0 {
		t.Fatalf("ReadDir %q: %v; ReadDirNames: %v (%d names)", p, err1, err2, len(got))
	}
}

// TestDirNameIsSmall keeps what doc.go and ReadDirNames say of the sizes
// true: a listing's name costs a fifth of a Node.
func TestDirNameIsSmall(t *testing.T) {
	if d, n := unsafe.Sizeof(DirName{}), unsafe.Sizeof(Node{}); d > 32 || n < 4*d {
		t.Fatalf("DirName is %d B and Node %d B", d, n)
	}
}
