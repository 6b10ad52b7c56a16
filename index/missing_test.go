package index

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/oxyfs/oxyfs/store"
	"github.com/oxyfs/oxyfs/store/format"
	"github.com/oxyfs/oxyfs/testkit/storefixture"
)

// TestListedMissingIsSaidOncePerKey (issue 42 item 1): on a file store a
// complete list names a signature whose key is gone. Every read of it
// (ReadSig, SigStat, OpenSig) fails with ErrListedMissing and
// fs.ErrNotExist, the first one warns — naming the key, the list and how
// it heals — and the count is one key however often it is read; a
// signature no list names is a plain ErrNotExist, not counted; a key put
// again reads at once.
func TestListedMissingIsSaidOncePerKey(t *testing.T) {
	ctx := context.Background()
	st := newFile(t, store.LayoutBucket)
	gone := storefixture.Ent(format.KindSig, objA, "alice")
	kept := storefixture.Ent(format.KindSig, objB, "bob")
	storefixture.PutEntries(t, st, gone, kept)
	list := storefixture.WriteEntryList(t, st, true, gone, kept)
	if err := st.Delete(ctx, gone.Key()); err != nil {
		t.Fatal(err)
	}
	ix, w := openIndex(t, st)
	for range 3 {
		_, err := ix.ReadSig(ctx, gone)
		if !errors.Is(err, ErrListedMissing) || !errors.Is(err, fs.ErrNotExist) || !strings.Contains(err.Error(), gone.Key()) {
			t.Errorf("ReadSig of a listed key that is gone: %v, want ErrListedMissing and ErrNotExist naming the key", err)
		}
		if _, _, err := ix.SigStat(ctx, gone); !errors.Is(err, ErrListedMissing) {
			t.Errorf("SigStat: %v, want ErrListedMissing", err)
		}
		if _, err := ix.OpenSig(ctx, gone); !errors.Is(err, ErrListedMissing) {
			t.Errorf("OpenSig: %v, want ErrListedMissing", err)
		}
	}
	unlisted := storefixture.Ent(format.KindSig, objC, "carol")
	if _, err := ix.ReadSig(ctx, unlisted); !errors.Is(err, fs.ErrNotExist) || errors.Is(err, ErrListedMissing) {
		t.Errorf("ReadSig of a key no list names: %v, want ErrNotExist alone", err)
	}
	var said []string
	for _, m := range w.all() {
		if strings.Contains(m, "listed but missing") {
			said = append(said, m)
		}
	}
	if len(said) != 1 || !strings.Contains(said[0], gone.Key()) || !strings.Contains(said[0], list) || !strings.Contains(said[0], "heals") {
		t.Errorf("warnings %q: want one, naming %s, its list %s and how it heals", said, gone.Key(), list)
	}
	if s := ix.Status(); s.ListedMissing != 1 || len(s.Warnings) == 0 {
		t.Errorf("Status: listed_missing %d, warnings %q; want 1 and the warning", s.ListedMissing, s.Warnings)
	}
	if _, err := ix.ReadSig(ctx, kept); err != nil {
		t.Errorf("the signature whose key exists: %v", err)
	}
	storefixture.PutEntries(t, st, gone)
	if _, err := ix.ReadSig(ctx, gone); err != nil {
		t.Errorf("a key put again: %v, want it read at once", err)
	}
}

// TestSigStatGivesTheKeysOwnTime (issue 39 item 1): on a file store two
// signatures whose files have different mtimes: SigStat gives each its
// file's mtime with its size for one GET; Node.ModTime has it once read,
// and a SigHandle too; after the bytes left the cache (a cache of one
// byte) the time is still answered, with no GET.
func TestSigStatGivesTheKeysOwnTime(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	st := storefixture.Open(t, "file://"+dir, store.Options{Layout: store.LayoutBucket})
	a := storefixture.Ent(format.KindSig, objA, "alice")
	b := storefixture.Ent(format.KindSig, objB, "bob")
	storefixture.PutEntries(t, st, a, b)
	storefixture.WriteEntryList(t, st, true, a, b)
	base := time.Now().Truncate(time.Second)
	times := map[string]time.Time{a.Key(): base.Add(-3 * time.Hour), b.Key(): base.Add(-time.Hour)}
	for k, at := range times {
		if err := os.Chtimes(filepath.Join(dir, filepath.FromSlash(k)), at, at); err != nil {
			t.Fatal(err)
		}
	}
	ix, err := Open(ctx, st, Options{Warn: func(string) {}, ReadAhead: -1, SigCacheBytes: 1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ix.Close() })
	if err := ix.Load(ctx); err != nil {
		t.Fatal(err)
	}
	for _, e := range []format.Entry{a, b} {
		want := times[e.Key()]
		gets := st.Counts().Get
		if n, err := ix.Stat(ctx, e.Key()); err != nil || !n.ModTime.IsZero() {
			t.Errorf("Stat before a read: %v, ModTime %v; want none known", err, n.ModTime)
		}
		if _, mod, err := ix.SigStat(ctx, e); err != nil || !mod.Equal(want) {
			t.Errorf("SigStat %s: %v %v, want %v", e.Value, mod, err, want)
		}
		if n, err := ix.Stat(ctx, e.Key()); err != nil || !n.ModTime.Equal(want) {
			t.Errorf("Stat after a read: %v, ModTime %v; want %v", err, n.ModTime, want)
		}
		if _, mod, err := ix.SigStat(ctx, e); err != nil || !mod.Equal(want) {
			t.Errorf("SigStat again (bytes evicted, time remembered) %s: %v %v, want %v", e.Value, mod, err, want)
		}
		if d := st.Counts().Get - gets; d != 1 {
			t.Errorf("%s: %d GETs, want 1 (the size's, which gives the time)", e.Value, d)
		}
		if fi, err := fs.Stat(ix.FS(), e.Key()); err != nil {
			t.Errorf("io/fs Stat %s: %v", e.Value, err)
		} else if !fi.ModTime().Equal(want) {
			t.Errorf("io/fs Stat %s: ModTime %v, want %v", e.Value, fi.ModTime(), want)
		}
		h, err := ix.OpenSig(ctx, e)
		if err != nil {
			t.Fatal(err)
		}
		if !h.ModTime().Equal(want) {
			t.Errorf("SigHandle.ModTime %v, want %v", h.ModTime(), want)
		}
		h.Release()
	}
}
