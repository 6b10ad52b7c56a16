package index

import (
	"context"
	"errors"
	"io/fs"
	"slices"
	"testing"
	"testing/fstest"

	"github.com/oxyfs/oxyfs/store"
	"github.com/oxyfs/oxyfs/store/format"
	"github.com/oxyfs/oxyfs/store/storegen"
	"github.com/oxyfs/oxyfs/testkit/storefixture"
)

// genStore generates a store and returns some paths it must show.
func genStore(t *testing.T, st *store.Store, g storegen.Options) []string {
	t.Helper()
	var paths []string
	g.OnEntry = func(e format.Entry, where string) {
		if len(paths) < 40 {
			paths = append(paths, e.Key())
			if e.Kind == format.KindSig {
				paths = append(paths, BySigner+"/"+e.Value+"/"+e.Object)
			}
		}
	}
	if _, err := storegen.Generate(context.Background(), st, g); err != nil {
		t.Fatal(err)
	}
	return paths
}

func TestFSFolded(t *testing.T) {
	st := storefixture.NewMem(t)
	paths := genStore(t, st, storegen.Options{Entries: 300, Seed: 11, Fold: true, Signers: 4})
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
	paths := genStore(t, st, storegen.Options{Entries: 150, Unjournaled: 20, Legacy: 10, Seed: 12, Signers: 4})
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
	paths := genStore(t, st, storegen.Options{Entries: 100, Legacy: 5, Seed: 13, Signers: 3})
	ix, _ := openIndex(t, st)
	if err := fstest.TestFS(ix.FS(), paths...); err != nil {
		t.Fatal(err)
	}
}

func TestFSBucketOnFileStore(t *testing.T) {
	st := newFile(t, store.LayoutBucket)
	paths := genStore(t, st, storegen.Options{Entries: 100, Seed: 14, Fold: true})
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

// TestFSContextFollowsItsContext: the view FSContext(ctx) reads on ctx;
// once ctx is done, a signature's size, its bytes and a directory fail
// with ctx's error and send nothing. On a live context it is the same
// tree as FS.
func TestFSContextFollowsItsContext(t *testing.T) {
	st := storefixture.NewMem(t)
	genStore(t, st, storegen.Options{Entries: 40, Seed: 14, Fold: true, Signers: 2})
	ix, _ := openIndex(t, st)
	ctx, cancel := context.WithCancel(context.Background())
	fsys := ix.FSContext(ctx)
	if err := fstest.TestFS(fsys, "sig", BySigner); err != nil {
		t.Fatal(err)
	}
	var sig string // a signature not read yet: its size is not known
	ix2, _ := openIndex(t, st)
	fsys = ix2.FSContext(ctx)
	if err := fs.WalkDir(ix2.FS(), "sig", func(p string, d fs.DirEntry, err error) error {
		if err == nil && sig == "" && !d.IsDir() {
			sig = p
		}
		return err
	}); err != nil || sig == "" {
		t.Fatalf("no signature found (%v)", err)
	}
	cancel()
	d := storefixture.Delta(st, func() {
		if _, err := fs.Stat(fsys, sig); !errors.Is(err, context.Canceled) {
			t.Errorf("Stat %s on a canceled context: %v", sig, err)
		}
		if _, err := fs.ReadFile(fsys, sig); !errors.Is(err, context.Canceled) {
			t.Errorf("ReadFile %s on a canceled context: %v", sig, err)
		}
		if _, err := fs.ReadDir(fsys, "sig"); !errors.Is(err, context.Canceled) {
			t.Errorf("ReadDir sig on a canceled context: %v", err)
		}
		if f, err := fsys.Open(sig); !errors.Is(err, context.Canceled) {
			if err == nil {
				f.Close()
			}
			t.Errorf("Open %s on a canceled context: %v", sig, err)
		}
	})
	if d.Total() != 0 {
		t.Errorf("a canceled view sent %v", d)
	}
}
