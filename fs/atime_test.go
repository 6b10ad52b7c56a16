package fs

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/oxyfs/oxyfs/store/storegen"
	"github.com/oxyfs/oxyfs/testkit/storefixture"
)

// TestWarmStatOfAListedDirectoryIsAGetattrOnReadWriteOnly pins what
// docs/performance.md says of a warm `find` on a read-write mount (issue
// 38): after the kernel reads a directory's listing from the mount, it
// marks the directory's atime stale (fuse_invalidate_atime, skipped on a
// read-only superblock only), so the next stat of each directory listed
// is one GETATTR, and the one after it none; on a --read-only mount there
// is none. The walk is find's: lstat a directory, then list it. If a
// kernel stops doing this, the documentation is to change with this test.
func TestWarmStatOfAListedDirectoryIsAGetattrOnReadWriteOnly(t *testing.T) {
	for _, ro := range []bool{false, true} {
		st := storefixture.NewMem(t)
		if _, err := storegen.Generate(context.Background(), st, storegen.Options{Entries: 200, Seed: 11, Signers: 5, Fold: true}); err != nil {
			t.Fatal(err)
		}
		srv, _ := testMount(t, openIndex(t, st), Options{ReadOnly: ro})
		var dirs []string
		var walk func(dir string)
		walk = func(dir string) {
			if _, err := os.Lstat(dir); err != nil {
				t.Fatal(err)
			}
			dirs = append(dirs, dir)
			des, err := os.ReadDir(dir)
			if err != nil {
				t.Fatal(err)
			}
			for _, de := range des {
				if de.IsDir() && de.Name() != ".oxy" {
					walk(filepath.Join(dir, de.Name()))
				}
			}
		}
		walk(srv.Dir())
		getattrs := func() int64 { return srv.Requests()["GETATTR"] }
		statAll := func() int64 {
			before := getattrs()
			for _, d := range dirs {
				if _, err := os.Lstat(d); err != nil {
					t.Fatal(err)
				}
			}
			return getattrs() - before
		}
		first, second := statAll(), statAll()
		want := int64(len(dirs))
		if ro {
			want = 0
		}
		if first != want || second != 0 {
			t.Errorf("read-only %v: stats of the %d directories listed sent %d GETATTRs, then %d; want %d, then 0",
				ro, len(dirs), first, second, want)
		}
	}
}
