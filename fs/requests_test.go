package fs

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/oxyfs/oxyfs/index"
	"github.com/oxyfs/oxyfs/store"
	"github.com/oxyfs/oxyfs/store/format"
	"github.com/oxyfs/oxyfs/store/storegen"
	"github.com/oxyfs/oxyfs/testkit/storefixture"
)

// mountGenerated mounts a folded store of n generated entries.
func mountGenerated(t *testing.T, n int) (*store.Store, *Server) {
	t.Helper()
	st := storefixture.NewMem(t)
	if _, err := storegen.Generate(context.Background(), st, storegen.Options{Entries: n, Seed: 11, Signers: 5, Fold: true}); err != nil {
		t.Fatal(err)
	}
	ix := openIndex(t, st)
	srv, _ := testMount(t, ix, Options{})
	return st, srv
}

// walk lists every directory (os.ReadDir) and lstats every name but the
// signatures, which it returns; files counts the other names (index entries,
// by-signer links, .oxy files), regular the regular files among them.
func walk(t *testing.T, root string) (sigs []string, files, dirs, regular int) {
	t.Helper()
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		switch {
		case d.IsDir():
			dirs++
			if _, err := os.ReadDir(p); err != nil {
				return err
			}
		case d.Type().IsRegular() && strings.HasPrefix(rel, "sig/"):
			sigs = append(sigs, p)
		default:
			files++
			if d.Type().IsRegular() {
				regular++
			}
			if _, err := os.Lstat(p); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return sigs, files, dirs, regular
}

// TestBrowsingAFoldedStoreSendsNoRequest is the product's claim: once
// mounted, walking the whole tree, listing every directory and stating every
// name but the signatures sends no request at all; the first stat of each
// signature sends exactly one GET, the second none, and reading it then none.
func TestBrowsingAFoldedStoreSendsNoRequest(t *testing.T) {
	st, srv := mountGenerated(t, 3000)
	var sigs []string
	var files, dirs, regular int
	if d := storefixture.Delta(st, func() { sigs, files, dirs, regular = walk(t, srv.Dir()) }); d.Total() != 0 {
		t.Fatalf("walking %d dirs and %d files sent %v", dirs, files, d)
	}
	t.Logf("%d dirs, %d index entries and links, %d signatures", dirs, files, len(sigs))
	if len(sigs) < 100 || files < 100 {
		t.Fatalf("the store is too small to prove anything: %d signatures, %d files", len(sigs), files)
	}
	if d := storefixture.Delta(st, func() { walk(t, srv.Dir()) }); d.Total() != 0 {
		t.Fatalf("walking again sent %v", d)
	}
	if out, err := exec.Command("find", srv.Dir(), "-type", "f").Output(); err != nil {
		t.Fatal(err)
	} else if d := storefixture.Delta(st, func() { exec.Command("find", srv.Dir(), "-type", "f").Run() }); d.Total() != 0 {
		t.Fatalf("find -type f sent %v", d)
	} else if n := strings.Count(string(out), "\n"); n != len(sigs)+regular {
		t.Errorf("find -type f found %d files, want %d", n, len(sigs)+regular)
	}
	stat := func() {
		for _, p := range sigs {
			if _, err := os.Lstat(p); err != nil {
				t.Fatal(err)
			}
		}
	}
	if d := storefixture.Delta(st, stat); d.Get != int64(len(sigs)) || d.Total() != d.Get {
		t.Fatalf("the first stat of %d signatures sent %v, want %d GET", len(sigs), d, len(sigs))
	}
	if d := storefixture.Delta(st, stat); d.Total() != 0 {
		t.Fatalf("the second stat sent %v", d)
	}
	if d := storefixture.Delta(st, func() {
		for _, p := range sigs[:100] {
			if _, err := os.ReadFile(p); err != nil {
				t.Fatal(err)
			}
		}
	}); d.Total() != 0 {
		t.Fatalf("reading 100 stated signatures sent %v", d)
	}
}

// TestCatOfAnUnstatedSignatureIsOneGet: reading a signature nobody stated
// costs the same single GET, and the size is right afterwards.
func TestCatOfAnUnstatedSignatureIsOneGet(t *testing.T) {
	st, srv := mountGenerated(t, 200)
	sigs, _, _, _ := walk(t, srv.Dir())
	for _, p := range sigs[:20] {
		var data []byte
		d := storefixture.Delta(st, func() {
			var err error
			if data, err = os.ReadFile(p); err != nil {
				t.Fatal(err)
			}
		})
		if d.Get != 1 || d.Total() != 1 || len(data) == 0 {
			t.Fatalf("cat %s: %d bytes, sent %v", p, len(data), d)
		}
		if d := storefixture.Delta(st, func() {
			fi, err := os.Lstat(p)
			if err != nil || fi.Size() != int64(len(data)) {
				t.Errorf("stat after cat: %v %v, want %d", fi, err, len(data))
			}
		}); d.Total() != 0 {
			t.Errorf("stat after cat sent %v", d)
		}
	}
}

func TestInoAgreesWithIndex(t *testing.T) {
	f := buildFixture(t)
	ix := openIndex(t, f.st)
	ctx := context.Background()
	for _, e := range f.all() {
		for _, p := range []string{e.Key(), e.Kind.String() + "/" + e.Object[:2], "by-signer/" + e.Value, e.Kind.String()} {
			n, err := ix.Stat(ctx, p)
			if err != nil {
				continue
			}
			if n.Ino != index.PathIno(p) {
				t.Errorf("%s: index ino %d, index.PathIno %d", p, n.Ino, index.PathIno(p))
			}
		}
	}
}

// TestInvalidateShowsWhatARefreshChanged: after another writer adds,
// replaces and (by a fold) drops entries, Refresh + Invalidate make the
// mount show it, though the kernel cached the old names and sizes for an hour.
func TestInvalidateShowsWhatARefreshChanged(t *testing.T) {
	f, ix, srv, _ := mountFixture(t, Options{})
	ctx := context.Background()
	alice := storefixture.Ent(format.KindSig, "ab12cd34", "alice")
	cert := storefixture.Ent(format.KindCert, "c0ffee", "key-2026")
	for _, e := range []format.Entry{alice, cert} {
		if _, err := os.Lstat(srv.path(e)); err != nil { // cache name and size
			t.Fatal(err)
		}
	}
	if des, _ := os.ReadDir(srv.Dir() + "/sig/ab/12cd34"); len(des) != 2 {
		t.Fatalf("before: %v", des)
	}
	if des, _ := os.ReadDir(srv.Dir() + "/by-signer"); len(des) != 3 {
		t.Fatalf("before: %v", des)
	}
	// Another writer: a new signature, and alice re-signs.
	other := openIndex(t, store.New(f.st.Bucket(), f.st.Backend(), "", store.Options{Layout: store.LayoutBucket}))
	ivan := storefixture.Ent(format.KindSig, "ab12cd34", "ivan")
	for _, w := range []struct {
		e    format.Entry
		data string
	}{{ivan, "ivan's"}, {alice, "alice again, longer than before"}} {
		if err := other.Put(ctx, w.e, []byte(w.data)); err != nil {
			t.Fatal(err)
		}
	}
	// A fold drops the cert: a new complete list without it, the old one retired.
	var keys []string
	for _, e := range f.listed {
		if e != cert {
			keys = append(keys, e.Key())
		}
	}
	id, data, err := format.EncodeEntryList(keys)
	if err != nil {
		t.Fatal(err)
	}
	f.st.Put(ctx, format.EntryListName(id, true), data)
	f.st.Put(ctx, format.RetiredKey, format.Retired([]format.RetiredLine{{RetiredAt: 1, Key: f.list}}))

	gen := ix.Generation()
	if err := ix.Refresh(ctx); err != nil {
		t.Fatal(err)
	}
	if ix.Generation() == gen {
		t.Fatal("the refresh changed nothing")
	}
	srv.Invalidate()
	if des, _ := os.ReadDir(srv.Dir() + "/sig/ab/12cd34"); len(des) != 3 {
		t.Errorf("after: %v", des)
	}
	if des, _ := os.ReadDir(srv.Dir() + "/by-signer"); len(des) != 4 {
		t.Errorf("by-signer after: %v", des)
	}
	if des, _ := os.ReadDir(srv.Dir() + "/cert"); len(des) != 0 {
		t.Errorf("cert after the fold: %v", des)
	}
	if got, err := os.ReadFile(srv.path(ivan)); err != nil || string(got) != "ivan's" {
		t.Errorf("ivan: %q %v", got, err)
	}
	if fi, err := os.Lstat(srv.path(alice)); err != nil || fi.Size() != int64(len("alice again, longer than before")) {
		t.Errorf("alice re-signed: %v %v", fi, err)
	}
	if got, err := os.ReadFile(srv.path(alice)); err != nil || string(got) != "alice again, longer than before" {
		t.Errorf("alice re-signed: %q %v", got, err)
	}
	if _, err := os.Lstat(srv.path(cert)); !errors.Is(err, syscall.ENOENT) {
		t.Errorf("folded-out cert: %v, want ENOENT", err)
	}
	if d := storefixture.Delta(f.st, srv.Invalidate); d.Total() != 0 {
		t.Errorf("a second Invalidate sent %v", d)
	}
}

func TestMountErrorsAreClear(t *testing.T) {
	f := buildFixture(t)
	ix := openIndex(t, f.st)
	if _, err := Mount(filepath.Join(t.TempDir(), "missing"), ix, Options{}); err == nil || !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("mount on a missing dir: %v", err)
	}
	srv, _ := testMount(t, ix, Options{})
	if _, err := Mount(srv.Dir(), ix, Options{}); !errors.Is(err, ErrMountBusy) {
		t.Errorf("mount on a mountpoint: %v, want ErrMountBusy", err)
	} else {
		t.Log(err)
	}
}

// TestUnfoldedStoreListsPrefixes: a bucket no fold has folded is browsed by
// listing prefixes (as the index does), and Invalidate drops what it cached.
func TestUnfoldedStoreListsPrefixes(t *testing.T) {
	f := buildFixture(t)
	ctx := context.Background()
	if err := f.st.Bucket().Delete(ctx, f.list); err != nil { // no complete list: not folded
		t.Fatal(err)
	}
	ix := openIndex(t, f.st)
	srv, _ := testMount(t, ix, Options{})
	if st := ix.Status(); st.Folded || st.Mode != index.ModePrefixListing {
		t.Fatalf("mode %q folded %v", st.Mode, st.Folded)
	}
	alice := storefixture.Ent(format.KindSig, "ab12cd34", "alice")
	var data []byte
	d := storefixture.Delta(f.st, func() {
		var err error
		if data, err = os.ReadFile(srv.path(alice)); err != nil {
			t.Fatal(err)
		}
	})
	if string(data) != string(f.sigs[alice.Key()]) || d.List == 0 {
		t.Errorf("read %d bytes, sent %v (want LISTs: prefixes are listed)", len(data), d)
	}
	if des, err := os.ReadDir(srv.Dir() + "/sig/ab/12cd34"); err != nil || len(des) != 2 {
		t.Fatalf("before: %v %v", des, err)
	}
	other := openIndex(t, store.New(f.st.Bucket(), f.st.Backend(), "", store.Options{Layout: store.LayoutBucket}))
	ivan := storefixture.Ent(format.KindSig, "ab12cd34", "ivan")
	if err := other.Put(ctx, ivan, []byte("ivan's")); err != nil {
		t.Fatal(err)
	}
	if err := ix.Refresh(ctx); err != nil {
		t.Fatal(err)
	}
	srv.Invalidate()
	if des, err := os.ReadDir(srv.Dir() + "/sig/ab/12cd34"); err != nil || len(des) != 3 {
		t.Errorf("after: %v %v", des, err)
	}
	if got, err := os.ReadFile(srv.path(ivan)); err != nil || string(got) != "ivan's" {
		t.Errorf("ivan: %q %v", got, err)
	}
}

// TestUnmountOfABusyMountSaysSo: unmounting while a file is open fails with
// ErrMountBusy and a hint, and works once it is closed.
func TestUnmountOfABusyMountSaysSo(t *testing.T) {
	f := buildFixture(t)
	ix := openIndex(t, f.st)
	srv, _ := testMount(t, ix, Options{})
	fh, err := os.Open(srv.path(storefixture.Ent(format.KindSig, "ab12cd34", "alice")))
	if err != nil {
		t.Fatal(err)
	}
	err = srv.Unmount()
	fh.Close()
	if !errors.Is(err, ErrMountBusy) {
		t.Errorf("unmount with a file open: %v, want ErrMountBusy", err)
	} else {
		t.Log(err)
	}
}
