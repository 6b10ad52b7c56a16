package fs

import (
	"bytes"
	"context"
	"os"
	"syscall"
	"testing"

	"github.com/oxyfs/oxyfs/store/format"
	"github.com/oxyfs/oxyfs/testkit/storefixture"
)

// TestARefusedWriteStillOpenHidesNoChange (the byte simulation's seed 200
// paged: stat 32 bytes, a private mmap 12 bytes then zeros, after a
// refused write through the mount): a write refused (EFBIG) will write
// nothing, but its handle stays open until the kernel's RELEASE — which
// comes after close returns, later under load, or never while a dup'ed
// descriptor is open (as here). Meanwhile another writer replaces the
// signature and a refresh shows it: stat and reads by name must show the
// new signature, not the refused handle's size, and the old version's
// node must not be kept current by it.
func TestARefusedWriteStillOpenHidesNoChange(t *testing.T) {
	f, ix, srv, _ := mountFixture(t, Options{AllowOverwrite: true})
	ctx := context.Background()
	alice := storefixture.Ent(format.KindSig, "ab12cd34", "alice")
	old := f.sigs[alice.Key()]
	p := srv.path(alice)
	readEvery(t, p, old)
	w, err := os.OpenFile(p, os.O_WRONLY|os.O_TRUNC, 0)
	if err != nil {
		t.Fatal(err)
	}
	dup, err := dupCloexec(w)
	if err != nil {
		t.Fatal(err)
	}
	defer syscall.Close(dup)
	if _, err := w.WriteAt(bytes.Repeat([]byte("w"), 3*len(old)), 0); err != nil {
		t.Fatal(err)
	}
	if _, err := w.WriteAt([]byte{1}, MaxWriteBytes); err == nil {
		t.Fatal("a write past MaxWriteBytes was not refused")
	}
	if err := w.Close(); err == nil {
		t.Fatal("close after a refused write succeeded")
	}
	replaced := []byte("replaced by another writer")
	if err := otherWriter(t, f).Put(ctx, alice, replaced); err != nil {
		t.Fatal(err)
	}
	if err := ix.Refresh(ctx); err != nil {
		t.Fatal(err)
	}
	srv.Invalidate()
	if got := statSize(t, p); got != int64(len(replaced)) {
		t.Errorf("stat while the refused handle is open: %d, want the new signature's %d", got, len(replaced))
	}
	readEvery(t, p, replaced)
}
