package fs

import (
	"bytes"
	"context"
	"errors"
	"io"
	iofs "io/fs"
	"os"
	"syscall"
	"testing"

	"github.com/hanwen/go-fuse/v2/fuse"

	"github.com/oxyfs/oxyfs/store/format"
	"github.com/oxyfs/oxyfs/testkit/storefixture"
)

// TestRetriedOpenKeepsOneVersionPerNode (issue 37, the byte simulation's
// B1 conc-mount-mmap-shared): an open of a node the kernel looked up just
// now, whose version moved since (another writer's re-sign and a
// refresh), reads the signature's current bytes — as the node's own
// version, never as a second version beside the node's. Every descriptor
// on a node shares its page cache, and fstat's GETATTR names no
// descriptor (go-fuse answers it from the node's first open file), so a
// descriptor of other bytes on the node was told another's size: a
// MAP_SHARED mapping sized by fstat read 16 bytes of one version and
// zeros up to the other's 45. While a descriptor holds the node's
// version (past adoptWait), such an open is ESTALE: the kernel looks the
// name up again and opens the new version's node.
func TestRetriedOpenKeepsOneVersionPerNode(t *testing.T) {
	f, ix, srv, _ := mountFixture(t, Options{})
	ctx := context.Background()
	alice := storefixture.Ent(format.KindSig, "ab12cd34", "alice")
	if got := statSize(t, srv.path(alice)); got != int64(len(f.sigs[alice.Key()])) {
		t.Fatalf("stat: %d bytes, want %d", got, len(f.sigs[alice.Key()]))
	}
	n := heldEntry(srv, alice.Key())
	if n == nil {
		t.Fatalf("the kernel holds no node of %s after a stat", alice.Key())
	}
	other := otherWriter(t, f)
	resign := func(data []byte) {
		t.Helper()
		if err := other.Put(ctx, alice, data); err != nil {
			t.Fatal(err)
		}
		if err := ix.Refresh(ctx); err != nil {
			t.Fatal(err)
		}
		if !n.stale() {
			t.Fatal("the re-sign and the refresh did not move the version")
		}
	}
	// The kernel's cached name of the node, used within the retry window
	// (the stat above looked it up): an open as the kernel sends it.
	first := bytes.Repeat([]byte("1"), 45)
	resign(first)
	fh, _, errno := n.Open(ctx, uint32(syscall.O_RDONLY))
	if errno != 0 {
		t.Fatalf("open in the retry window after the version moved: %v, want it opened", errno)
	}
	h := fh.(*readHandle)
	defer h.Release(ctx)
	if !bytes.Equal(h.data, first) {
		t.Fatalf("open read %d bytes %.8q…, want the current %d", len(h.data), h.data, len(first))
	}
	if h.node != n || n.stale() || n.readers.Load() != 1 {
		t.Errorf("the open read the current bytes beside the node's version (node's version %d, the signature's %d, counted %v): a second version on one node", n.ver.Load(), ix.SigVersion(alice), h.node == n)
	}
	// fstat names no descriptor: go-fuse answers it from the node's first
	// open file, here the only one. Its size must be the node's.
	var out fuse.AttrOut
	if errno := n.Getattr(ctx, h, &out); errno != 0 || out.Size != uint64(len(first)) {
		t.Errorf("fstat: %v, %d bytes, want %d", errno, out.Size, len(first))
	}

	// Moved again while that descriptor holds the node's version: the
	// open cannot make the node another version; ESTALE (the kernel looks
	// the name up again), not a descriptor of other bytes beside it.
	resign(bytes.Repeat([]byte("2"), 16))
	fh2, _, errno := n.Open(ctx, uint32(syscall.O_RDONLY))
	if errno == 0 {
		h2 := fh2.(*readHandle)
		h2.Release(ctx)
		if !bytes.Equal(h2.data, h.data) {
			t.Errorf("open while a descriptor holds the node's %d bytes: opened %d other bytes on the same node, want ESTALE", len(h.data), len(h2.data))
		}
	} else if errno != syscall.ESTALE {
		t.Errorf("open while a descriptor holds the node's version: %v, want ESTALE", errno)
	}
}

// TestListedSignatureGoneFromTheStoreIsENOENT (issue 37, the byte
// simulation's E1 conc-mount-read-error: "open …: stale file handle"): a
// signature the view lists whose key is gone from the store (a collection
// forgot it; no refresh yet) is "no such file" through the mount, not
// ESTALE: its stat's GETATTR found the key gone and answered ESTALE, the
// kernel looked the name up again — the view still lists it, the same
// node — and passed the second ESTALE to the caller.
func TestListedSignatureGoneFromTheStoreIsENOENT(t *testing.T) {
	f, _, srv, _ := mountFixture(t, Options{})
	ctx := context.Background()
	bob := storefixture.Ent(format.KindSig, "ab12cd34", "bob")
	if err := f.st.Delete(ctx, bob.Key()); err != nil {
		t.Fatal(err)
	}
	for _, way := range []struct {
		name string
		fn   func(string) error
	}{
		{"stat", func(p string) error { _, err := os.Stat(p); return err }},
		{"open", func(p string) error { _, err := os.ReadFile(p); return err }},
	} {
		if err := way.fn(srv.path(bob)); !errors.Is(err, iofs.ErrNotExist) {
			t.Errorf("%s of a listed signature whose key is gone: %v (ESTALE: %v), want no such file", way.name, err, errors.Is(err, syscall.ESTALE))
		}
	}
}

// TestHeldDescriptorBesideAWriteKeepsItsVersion (issue 37 item 9, the
// byte simulation's B2 bytes-held-mount: a descriptor held across a
// replacement read bytes of two versions): a node with a write in
// progress keeps its name across a refresh, so an open for reading of it
// then read the signature's current bytes on that node — beside a
// descriptor holding the node's older version. Their pages are the
// node's, and fstat's GETATTR is answered from the node's first open
// file: the new reader's mapping was sized by the held one's fstat, and
// the held descriptor then read the new reader's pages. Now an open
// beside the write reads the write's bytes (beside.go), on the write's own
// node (the held descriptor's node answers ESTALE and the kernel looks the
// name up again), so neither shares the other's pages.
func TestHeldDescriptorBesideAWriteKeepsItsVersion(t *testing.T) {
	f, ix, srv, _ := mountFixture(t, Options{AllowOverwrite: true})
	ctx := context.Background()
	alice := storefixture.Ent(format.KindSig, "ab12cd34", "alice")
	old := f.sigs[alice.Key()]
	p := srv.path(alice)
	held, err := os.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()
	head := make([]byte, 8)
	if _, err := held.ReadAt(head, 0); err != nil || !bytes.Equal(head, old[:8]) {
		t.Fatalf("pread of 8 bytes: %q %v", head, err)
	}
	w, err := os.OpenFile(p, os.O_WRONLY|os.O_TRUNC, 0o644)
	if err != nil {
		t.Fatalf("open for writing: %v", err)
	}
	defer w.Close()
	if _, err := w.WriteAt([]byte("partial"), 0); err != nil {
		t.Fatal(err)
	}
	newer := bytes.Repeat([]byte("N"), 45)
	if err := otherWriter(t, f).Put(ctx, alice, newer); err != nil {
		t.Fatal(err)
	}
	if err := ix.Refresh(ctx); err != nil {
		t.Fatal(err)
	}
	srv.Invalidate()
	statSize(t, p) // the kernel holds the node's size (the write's node, current while it is in progress)

	m, err := mapIn(t, p, false)
	if err != nil {
		t.Fatalf("map %s beside the write: %v", p, err)
	}
	if got := m.read(); !bytes.Equal(got, []byte("partial")) {
		t.Errorf("a mapping opened beside the write shows %d bytes %.12q…, want the write's bytes so far, %q", len(got), got, "partial")
	}
	got, err := io.ReadAll(io.NewSectionReader(held, 0, 1<<20))
	if err != nil || !bytes.Equal(got, old) {
		t.Errorf("the held descriptor read %d bytes %.12q… (%v), want its version's %d bytes %.12q…", len(got), got, err, len(old), old)
	}
	m.close()
}
