package index

import (
	"context"
	"io/fs"
	"slices"
	"testing"
	"testing/fstest"

	"github.com/oxyfs/oxyfs/internal/storefixture"
	"github.com/oxyfs/oxyfs/store"
)

// genStore generates a store and returns some paths it must show.
func genStore(t *testing.T, st *store.Store, g GenOptions) []string {
	t.Helper()
	var paths []string
	g.OnEntry = func(e store.Entry, where string) {
		if len(paths) < 40 {
			paths = append(paths, e.Key())
			if e.Kind == store.KindSig {
				paths = append(paths, BySigner+"/"+e.Value+"/"+e.Object)
			}
		}
	}
	if _, err := Generate(context.Background(), st, g); err != nil {
		t.Fatal(err)
	}
	return paths
}

func TestFSFolded(t *testing.T) {
	st := storefixture.NewMem(t)
	paths := genStore(t, st, GenOptions{Entries: 300, Seed: 11, Fold: true, Signers: 4})
	ix, _ := openIndex(t, st)
	if err := fstest.TestFS(ix.FS(), paths...); err != nil {
		t.Fatal(err)
	}
	if ix.Status().Mode != ModeFolded {
		t.Fatalf("mode %s", ix.Status().Mode)
	}
}

func TestFSUnfolded(t *testing.T) {
	st := storefixture.NewMem(t)
	paths := genStore(t, st, GenOptions{Entries: 150, Unjournaled: 20, Legacy: 10, Seed: 12, Signers: 4})
	ix, _ := openIndex(t, st)
	if err := fstest.TestFS(ix.FS(), paths...); err != nil {
		t.Fatal(err)
	}
	if s := ix.Status(); s.Mode != ModePrefixListing || !s.LegacyRead {
		t.Fatalf("status %+v", s)
	}
}

func TestFSDirectory(t *testing.T) {
	st := newFile(t, store.LayoutDirectory)
	paths := genStore(t, st, GenOptions{Entries: 100, Legacy: 5, Seed: 13, Signers: 3})
	ix, _ := openIndex(t, st)
	if err := fstest.TestFS(ix.FS(), paths...); err != nil {
		t.Fatal(err)
	}
}

func TestFSBucketOnFileStore(t *testing.T) {
	st := newFile(t, store.LayoutBucket)
	paths := genStore(t, st, GenOptions{Entries: 100, Seed: 14, Fold: true})
	ix, _ := openIndex(t, st)
	if err := fstest.TestFS(ix.FS(), paths...); err != nil {
		t.Fatal(err)
	}
	if ix.Status().Mode != ModeFolded {
		t.Fatalf("mode %s", ix.Status().Mode)
	}
}

func TestFSSymlinks(t *testing.T) {
	st, a := foldedStore(t)
	ix, _ := openIndex(t, st)
	fsys := ix.FS()
	link := BySigner + "/alice/" + objA
	target, err := fs.ReadLink(fsys, link)
	if err != nil || target != "../../sig/ab/"+objA[2:]+"/alice" {
		t.Fatalf("ReadLink %q %v", target, err)
	}
	li, err := fs.Lstat(fsys, link)
	if err != nil || li.Mode()&fs.ModeSymlink == 0 {
		t.Fatalf("Lstat %v %v", li, err)
	}
	fi, err := fs.Stat(fsys, link)
	if err != nil || !fi.Mode().IsRegular() || fi.Size() != int64(len(storefixture.SigBytes(a.Key()))) || fi.Name() != objA {
		t.Fatalf("Stat %v %v", fi, err)
	}
	data, err := fs.ReadFile(fsys, link)
	if err != nil || string(data) != string(storefixture.SigBytes(a.Key())) {
		t.Fatalf("ReadFile %q %v", data, err)
	}
	if _, err := fs.ReadLink(fsys, a.Key()); err == nil {
		t.Fatal("ReadLink of a file succeeded")
	}
	root, err := fs.ReadDir(fsys, ".")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range root {
		got = append(got, e.Name())
	}
	if !slices.Equal(got, []string{"accepted", "approval", BySigner, "cert", "receipt", "seal", "sig"}) {
		t.Fatalf("root %v", got)
	}
	for _, bad := range []string{"sig/AB", "sig/ab/x", "/sig", "sig/", "nope", "sig/ab/" + objA[2:] + "/alice/more"} {
		if _, err := fs.Stat(fsys, bad); err == nil {
			t.Errorf("Stat %q succeeded", bad)
		}
	}
}
