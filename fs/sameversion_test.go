package fs

import (
	"bytes"
	"context"
	"syscall"
	"testing"

	"github.com/hanwen/go-fuse/v2/fuse"

	"github.com/oxyfs/oxyfs/store/format"
	"github.com/oxyfs/oxyfs/testkit/storefixture"
)

// TestAVersionMovedToTheSameBytesKeepsItsNode: a node of a signature whose
// version moved while its bytes stayed the same (here: another writer puts
// the same bytes, and a refresh sees its journal line; on a mount, a
// refresh that sees the line of the mount's own write when other writers'
// lines came between) opens, and takes the new version as its own —
// answering ESTALE sent the open back to look the name up, and a second
// such move within the kernel's one retry reached the reader as "stale
// file handle" (docs/reliability.md, "the double move"). A version of
// other bytes is still ESTALE.
func TestAVersionMovedToTheSameBytesKeepsItsNode(t *testing.T) {
	ctx := context.Background()
	st := storefixture.NewMem(t)
	ix := openIndex(t, st)
	srv, _ := testMount(t, ix, Options{AllowOverwrite: true})
	other := openIndex(t, st)
	k := storefixture.Ent(format.KindSig, "abcdef", "alice")
	same := bytes.Repeat([]byte("same bytes "), 5)
	if err := other.Put(ctx, k, same); err != nil {
		t.Fatal(err)
	}
	if err := ix.Refresh(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := ix.ReadSig(ctx, k); err != nil {
		t.Fatal(err)
	}
	v0, id, ok := ix.SigIdentity(k)
	if !ok || id.Size != int64(len(same)) {
		t.Fatalf("SigIdentity after a read = %d %+v %v, want the bytes' identity", v0, id, ok)
	}
	n := &entryNode{base: base{m: srv}, path: k.Key(), e: k}
	n.ident.Store(&id)
	n.ver.Store(v0)
	statNode := &entryNode{base: base{m: srv}, path: k.Key(), e: k}
	statNode.ident.Store(&id)
	statNode.ver.Store(v0)

	if err := other.Put(ctx, k, same); err != nil {
		t.Fatal(err)
	}
	if err := ix.Refresh(ctx); err != nil {
		t.Fatal(err)
	}
	v1 := ix.SigVersion(k)
	if v1 == v0 {
		t.Fatal("another writer's line did not move the version")
	}
	if !n.stale() {
		t.Fatal("the node of the version before is not stale")
	}
	// A stat asks no request: while the index does not know the new
	// version's bytes it is ESTALE; once a read found them the same, the
	// node takes the version.
	var out fuse.AttrOut
	if errno := statNode.Getattr(ctx, nil, &out); errno != syscall.ESTALE {
		t.Errorf("stat of the old node before the bytes were read again: %v, want ESTALE", errno)
	}
	if _, err := ix.ReadSig(ctx, k); err != nil {
		t.Fatal(err)
	}
	if errno := statNode.Getattr(ctx, nil, &out); errno != 0 || out.Size != uint64(len(same)) || statNode.ver.Load() != v1 {
		t.Errorf("stat of the old node once the same bytes were read: %v, size %d, version %d; want it taken (%d bytes, version %d)", errno, out.Size, statNode.ver.Load(), len(same), v1)
	}
	f, _, errno := n.Open(ctx, uint32(syscall.O_RDONLY))
	if errno != 0 {
		t.Fatalf("open of a node whose version moved to the same bytes: %v, want it opened", errno)
	}
	if h := f.(*readHandle); !bytes.Equal(h.data, same) {
		t.Errorf("read %q, want %q", h.data, same)
	}
	if n.ver.Load() != v1 || n.stale() {
		t.Errorf("the node's version is %d (stale %v), want %d", n.ver.Load(), n.stale(), v1)
	}

	if err := other.Put(ctx, k, []byte("other bytes")); err != nil {
		t.Fatal(err)
	}
	if err := ix.Refresh(ctx); err != nil {
		t.Fatal(err)
	}
	if _, _, errno := n.Open(ctx, uint32(syscall.O_RDONLY)); errno != syscall.ESTALE {
		t.Errorf("open of a node whose version moved to other bytes: %v, want ESTALE", errno)
	}
}
