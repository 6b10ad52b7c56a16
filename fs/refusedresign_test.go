package fs

import (
	"bytes"
	"io"
	"os"
	"testing"

	"github.com/oxyfs/oxyfs/store/format"
	"github.com/oxyfs/oxyfs/testkit/storefixture"
)

// TestReadAfterARefusedCreateOverASignature (the simulation's
// mount-write-refused, issue 37 trial): a signature stated (its size cached
// by the kernel) is opened O_WRONLY|O_CREATE|O_TRUNC through the mount,
// written, written past MaxWriteBytes (refused), written again and closed
// (the close fails, nothing lands), its RELEASE kept back or not by a
// dup'ed descriptor. A descriptor opened during the write reads what the
// write held; every open after the close reads the store's bytes whole,
// and stat says their size.
func TestReadAfterARefusedCreateOverASignature(t *testing.T) {
	for _, linger := range []bool{false, true} {
		f, _, srv, _ := mountFixture(t, Options{AllowOverwrite: true})
		alice := storefixture.Ent(format.KindSig, "ab12cd34", "alice")
		old := f.sigs[alice.Key()]
		p := srv.path(alice)
		if got := statSize(t, p); got != int64(len(old)) {
			t.Fatalf("stat: %d, want %d", got, len(old))
		}
		w, err := os.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
		if err != nil {
			t.Fatal(err)
		}
		r, err := os.Open(p)
		if err != nil {
			t.Fatalf("linger %v: open beside the write: %v", linger, err)
		}
		data := bytes.Repeat([]byte("D"), 12)
		if _, err := w.WriteAt(data, 0); err != nil {
			t.Fatal(err)
		}
		if _, err := w.WriteAt([]byte{1}, MaxWriteBytes); err == nil {
			t.Fatal("a write past MaxWriteBytes was not refused")
		}
		if _, err := w.WriteAt(data, int64(len(data))); err != nil {
			t.Fatal(err)
		}
		if linger {
			nfd, err := dupCloexec(w)
			if err != nil {
				t.Fatal(err)
			}
			dup := os.NewFile(uintptr(nfd), "dup")
			defer dup.Close()
		}
		if err := w.Close(); err == nil {
			t.Fatal("close after a refused write succeeded")
		}
		if got := statSize(t, p); got != int64(len(old)) {
			t.Errorf("linger %v: stat after the refused write's close: %d bytes, want the store's %d", linger, got, len(old))
		}
		if got, err := os.ReadFile(p); err != nil || !bytes.Equal(got, old) {
			t.Errorf("linger %v: an open after the refused write's close read %d bytes %.8q… (%v), want the store's %d", linger, len(got), got, err, len(old))
		}
		if got, err := io.ReadAll(io.NewSectionReader(r, 0, 1<<20)); err != nil || !bytes.Equal(got, bytes.Repeat(data, 2)) {
			t.Errorf("linger %v: the descriptor opened during the write read %d bytes %.8q… (%v), want what the write held (%d)", linger, len(got), got, err, 2*len(data))
		}
		r.Close()
		if !linger {
			waitWriteReleased(t, srv, p)
			if got, err := os.ReadFile(p); err != nil || !bytes.Equal(got, old) {
				t.Errorf("an open after the refused write was released read %d bytes %.8q… (%v), want the store's %d", len(got), got, err, len(old))
			}
		}
	}
}
