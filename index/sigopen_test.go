package index

import (
	"bytes"
	"context"
	"errors"
	"testing"

	"github.com/oxyfs/oxyfs/store"
	"github.com/oxyfs/oxyfs/store/format"
	"github.com/oxyfs/oxyfs/testkit/memtest"
	"github.com/oxyfs/oxyfs/testkit/storefixture"
)

// bigSig puts a signature of n bytes and returns its entry and bytes.
func bigSig(t *testing.T, st *store.Store, signer string, n int) (format.Entry, []byte) {
	t.Helper()
	e := storefixture.Ent(format.KindSig, objA, signer)
	data := bytes.Repeat([]byte(signer[:1]), n)
	if err := st.Put(context.Background(), e.Key(), data); err != nil {
		t.Fatal(err)
	}
	return e, data
}

// TestOpenSigHoldsOneCopyForManyReaders (issue 25, item 1): forty readers
// of one 4 MiB signature hold one copy of it (the cache's), where forty
// ReadSig copies hold forty.
func TestOpenSigHoldsOneCopyForManyReaders(t *testing.T) {
	const size, readers = 4 << 20, 40
	ctx := context.Background()
	st := storefixture.NewMem(t)
	e, data := bigSig(t, st, "alice", size)
	storefixture.WriteEntryList(t, st, true, e)
	ix, _ := openIndex(t, st)
	if err := ix.Load(ctx); err != nil {
		t.Fatal(err)
	}
	var hs []*SigHandle
	peak := memtest.Peak(func() {
		for range readers {
			h, err := ix.OpenSig(ctx, e)
			if err != nil {
				t.Fatal(err)
			}
			hs = append(hs, h)
		}
	})
	for _, h := range hs {
		if !bytes.Equal(h.Bytes(), data) {
			t.Fatal("a handle's bytes differ from the signature's")
		}
		if &h.Bytes()[0] != &hs[0].Bytes()[0] {
			t.Fatal("two handles on one version hold two copies")
		}
	}
	if rs := ix.ReadersStats(); rs.HeldBytes != size {
		t.Errorf("readers hold %d bytes, want one copy, %d", rs.HeldBytes, size)
	}
	for _, h := range hs {
		h.Release()
		h.Release() // a second release does nothing
	}
	if rs := ix.ReadersStats(); rs.HeldBytes != 0 {
		t.Errorf("after every release readers hold %d bytes", rs.HeldBytes)
	}
	var copies [][]byte
	before := memtest.Peak(func() {
		for range readers {
			b, err := ix.ReadSig(ctx, e)
			if err != nil {
				t.Fatal(err)
			}
			copies = append(copies, b)
		}
	})
	copies = nil
	t.Logf("peak heap of %d readers of a %d MiB signature: %d MiB with OpenSig, %d MiB with a copy each (ReadSig)", readers, size>>20, peak/memtest.MiB, before/memtest.MiB)
	if peak > 3*size {
		t.Errorf("peak heap %d MiB for %d readers of one %d MiB signature, want about one copy", peak/memtest.MiB, readers, size>>20)
	}
}

// TestOpenSigPastTheBudgetIsRefusedBeforeItsBody: with readers holding one
// signature, an open of another that would pass the budget is ErrBusy
// before its body is read (the budget's peak never passes it), an open of
// the held version is not refused, and once the readers are gone the
// other opens.
func TestOpenSigPastTheBudgetIsRefusedBeforeItsBody(t *testing.T) {
	const size = 600 << 10
	ctx := context.Background()
	st := storefixture.NewMem(t)
	a, _ := bigSig(t, st, "alice", size)
	b, bData := bigSig(t, st, "bob", size)
	storefixture.WriteEntryList(t, st, true, a, b)
	ix, err := Open(ctx, st, Options{Warn: func(string) {}, ReadAhead: -1, SigCacheBytes: 64 << 10, ReaderBytes: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ix.Close() })
	ha, err := ix.OpenSig(ctx, a)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ix.OpenSig(ctx, b); !errors.Is(err, ErrBusy) {
		t.Fatalf("open past the budget: %v, want ErrBusy", err)
	}
	ha2, err := ix.OpenSig(ctx, a)
	if err != nil {
		t.Fatalf("open of the version held: %v", err)
	}
	rs := ix.ReadersStats()
	if rs.PeakBytes > rs.BoundBytes || rs.Refused != 1 {
		t.Errorf("readers: %+v, want a peak within the bound and 1 refusal", rs)
	}
	ha.Release()
	ha2.Release()
	hb, err := ix.OpenSig(ctx, b)
	if err != nil || !bytes.Equal(hb.Bytes(), bData) {
		t.Fatalf("open once the readers are gone: %v", err)
	}
	hb.Release()
}

// TestOpenSigOfANewVersionIsANewCopy: a handle keeps the version it opened
// when the signature is replaced; a new open gets the new bytes and a new
// version.
func TestOpenSigOfANewVersionIsANewCopy(t *testing.T) {
	ctx := context.Background()
	st := storefixture.NewMem(t)
	a, old := bigSig(t, st, "alice", 100)
	storefixture.WriteEntryList(t, st, true, a)
	ix, _ := openIndex(t, st)
	h1, err := ix.OpenSig(ctx, a)
	if err != nil {
		t.Fatal(err)
	}
	defer h1.Release()
	if err := ix.Put(ctx, a, []byte("new")); err != nil {
		t.Fatal(err)
	}
	h2, err := ix.OpenSig(ctx, a)
	if err != nil {
		t.Fatal(err)
	}
	defer h2.Release()
	if !bytes.Equal(h1.Bytes(), old) || string(h2.Bytes()) != "new" || h1.Version() == h2.Version() || h2.Version() != ix.SigVersion(a) {
		t.Errorf("old handle %d bytes v%d, new %q v%d, SigVersion %d", len(h1.Bytes()), h1.Version(), h2.Bytes(), h2.Version(), ix.SigVersion(a))
	}
}

// TestIOFSFilesShareOneCopy: open files of the io/fs view on one signature
// hold one copy between them, given back when they close.
func TestIOFSFilesShareOneCopy(t *testing.T) {
	ctx := context.Background()
	st := storefixture.NewMem(t)
	a, data := bigSig(t, st, "alice", 1000)
	storefixture.WriteEntryList(t, st, true, a)
	ix, _ := openIndex(t, st)
	if err := ix.Load(ctx); err != nil {
		t.Fatal(err)
	}
	var files []interface{ Close() error }
	for range 3 {
		f, err := ix.FS().Open(a.Key())
		if err != nil {
			t.Fatal(err)
		}
		got := make([]byte, len(data)+1)
		if n, _ := f.Read(got); !bytes.Equal(got[:n], data) {
			t.Fatalf("read %d bytes", n)
		}
		files = append(files, f)
	}
	if rs := ix.ReadersStats(); rs.HeldBytes != int64(len(data)) {
		t.Errorf("three open files hold %d bytes, want one copy, %d", rs.HeldBytes, len(data))
	}
	for _, f := range files {
		f.Close()
	}
	if rs := ix.ReadersStats(); rs.HeldBytes != 0 {
		t.Errorf("after Close the files hold %d bytes", rs.HeldBytes)
	}
}
